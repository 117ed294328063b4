package cache

// ActualStateOfWorld in a test file is not one of the two sets.
type ActualStateOfWorld interface{}
