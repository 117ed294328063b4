package cache

// DesiredStateOfWorld defines a set of thread safe operations for the
// kubelet plugin manager's desired state of the world cache.
type DesiredStateOfWorld interface{}

// ActualStateOfWorld is declared second in this file, after the desired.
type ActualStateOfWorld struct{}
