package util

// UsesStateOfWorld mentions the DesiredStateOfWorld without declaring it.
func UsesStateOfWorld() string { return "DesiredStateOfWorld" }
