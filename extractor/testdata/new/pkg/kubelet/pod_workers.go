package kubelet

import "sync"

type (
	// UpdatePodOptions is an options struct to pass to a UpdatePod operation.
	UpdatePodOptions struct {
		Pod string
	}

	// PodWorkerState classifies the status of pod as seen by the pod worker.
	PodWorkerState int

	podSet = map[string]struct{}

	syncedPods []string
)

/*
podSyncStatus is documented in a block comment.

	It keeps its indentation.
*/
type podSyncStatus struct {
	sync.Mutex
}

// queue is a generic type instantiated below.
type queue[T any] struct{ items []T }

// podQueue is a generic instantiation.
type podQueue queue[string]

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

type workCh chan *UpdatePodOptions

type workPtr *UpdatePodOptions

type window [2]int
