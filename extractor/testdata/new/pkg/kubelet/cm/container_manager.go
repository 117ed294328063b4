package cm

// ContainerManager manages the containers running on a machine. Its
// Updates comes from an embedded interface declared in another file.
type ContainerManager interface {
	resourceUpdater
	Start() error
}
