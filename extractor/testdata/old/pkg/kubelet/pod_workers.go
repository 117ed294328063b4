package kubelet

// OnCompleteFunc is a function that is invoked when an operation completes.
// If err is non-nil, the operation did not complete successfully.
type OnCompleteFunc func(err error)

// PodWorkers is an abstract interface for testability.
type PodWorkers interface {
	UpdatePod(options UpdatePodOptions)
}

type syncPodFnType func(options syncPodOptions) error

// podWorkers keeps track of operations on pods. Its states:
//
//	pending --UpdatePod--> syncing
//	   |                      |
//	   +------> terminated <--+
//
// The diagram's tabs survive.
type podWorkers struct {
	podUpdates map[string]chan UpdatePodOptions
}
