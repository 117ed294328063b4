package extractor

// Case keys: the names caseKey gives the cases of syncLoopIteration, derived
// from their channel expressions. They are spelled here and nowhere else:
// the classifier's table, the demo, the worksheet's reconciliation and the
// notes' order name them through these constants, and the page gets each
// case's colour slot (CaseHue) with the case, so CSS and JavaScript hold no
// list of keys. An upstream rename is one edit here (and the note's file).
const (
	KeyConfig       = "config"
	KeyPLEG         = "pleg"
	KeySync         = "sync"
	KeyLiveness     = "liveness"
	KeyReadiness    = "readiness"
	KeyStartup      = "startup"
	KeyContainer    = "container"
	KeyHousekeeping = "housekeeping"
)

// CaseKeys are the known case keys in the order of the select at recent
// tags; a key's index is its colour slot on the page.
var CaseKeys = [...]string{KeyConfig, KeyPLEG, KeySync, KeyLiveness, KeyReadiness, KeyStartup, KeyContainer, KeyHousekeeping}

// CaseKeyPattern is what a case key may be, a key a later tag adds
// included: what a page, a room's message or an address may name (the
// rooms' "at" messages, the history page check theirs against it).
const CaseKeyPattern = `^[a-z][a-z0-9_]{0,31}$`

// CaseHue is key's colour slot, 0 to len(CaseKeys)-1, or -1 for a key this
// list does not know (a case a future tag adds): the page shows it in the
// neutral colour.
func CaseHue(key string) int {
	for i, k := range CaseKeys {
		if k == key {
			return i
		}
	}
	return -1
}

// IsProbeKey says whether key is one of the prober managers' cases, which
// share handleProbeSync and the doc comment's "health manager".
func IsProbeKey(key string) bool {
	return key == KeyLiveness || key == KeyReadiness || key == KeyStartup
}
