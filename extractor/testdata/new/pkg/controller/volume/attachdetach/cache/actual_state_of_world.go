package cache

type (
	// ActualStateOfWorld defines a set of thread-safe operations supported on
	// the attach/detach controller's actual state of the world cache.
	ActualStateOfWorld interface {
		MarkVolumeAsAttached(name string)
	}

	actualStateOfWorld struct{}
)
