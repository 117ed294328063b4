package pleg

// PodLifecycleEvent is an event that reflects the change of the pod state.
type PodLifecycleEvent struct {
	ID   string
	Type string
	Data interface{}
}

// PodLifecycleEventGenerator contains functions for generating pod life
// cycle events.
type PodLifecycleEventGenerator interface {
	Watch() chan *PodLifecycleEvent
	// Relist is not in the real interface; the fixture has it to locate an
	// interface method.
	Relist()
}
