package resourceupdates

// Update is an event from a device or DRA plugin.
type Update struct {
	PodUIDs []string
}
