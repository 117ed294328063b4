//go:build !linux

package broker

// syncFS is not available here: the embedded server then fsyncs each
// write before its PubAck (SyncAlways), and Synced waits for nothing.
func syncFS(string) (func() error, func(), error) { return nil, nil, nil }
