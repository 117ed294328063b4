package pleg

// EventedPLEG is a concrete type whose method returns the channel.
type EventedPLEG struct{ ch chan *PodLifecycleEvent }

// Watch returns the channel of events.
func (e *EventedPLEG) Watch() chan *PodLifecycleEvent { return e.ch }
