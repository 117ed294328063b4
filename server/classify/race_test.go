//go:build race

package classify

// raceEnabled: under the race detector, TestEveryTag reads the tags where
// the log styles change rather than all of them (extraction is slow there;
// the plain run covers every tag).
const raceEnabled = true
