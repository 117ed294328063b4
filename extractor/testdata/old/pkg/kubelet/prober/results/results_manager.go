package results

// Manager provides a probe results cache and channel of updates.
type Manager interface {
	// Updates creates a channel that receives an Update whenever its result changes (but not
	// removed).
	Updates() <-chan Update
}

// Update is an enum of the types of updates sent over the Updates channel.
type Update struct {
	PodUID string
}
