package cm

// ContainerManager in a test file must not be what the resolver finds.
type ContainerManager interface {
	Updates() <-chan int
}
