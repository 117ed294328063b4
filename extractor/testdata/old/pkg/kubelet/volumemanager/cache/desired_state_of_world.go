package cache

// DesiredStateOfWorld defines a set of thread-safe operations for the kubelet
// volume manager's desired state of the world cache.
type DesiredStateOfWorld interface {
	AddPod(name string)
}
