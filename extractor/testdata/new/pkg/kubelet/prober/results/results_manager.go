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

type manager struct{ updates chan Update }

// Set sets the cached result for the container with the given ID.
func (m *manager) Set(id string) {}

// Updates returns the channel of updates.
func (m *manager) Updates() <-chan Update { return m.updates }
