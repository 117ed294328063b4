package classify

// table.go is the robust path: which case a message belongs to, whatever the
// kubelet's version. Read from syncLoopIteration and handleProbeSync in
// pkg/kubelet/kubelet.go at every minor tag from v1.20.0 to v1.37.2, and
// checked against v1.N.0 of each of those minors and the default tag by
// TestEveryTag, which also requires every rule to match some log site:
//
//   - v1.20: printf style, klog.Infof("SyncLoop (ADD, %q): %q", …); five
//     cases; the liveness case logs "SyncLoop (container unhealthy): %q".
//   - v1.21–v1.35: structured, klog.InfoS("SyncLoop ADD", "source", …);
//     readiness and startup cases join liveness, and the three probe cases
//     share handleProbeSync, which logs "SyncLoop (probe)"
//     probe="liveness|readiness|startup".
//   - v1.31+: adds the containerManager case, "SyncLoop (containermanager)…".
//   - v1.36+: contextual logging, logger.V(2).Info("SyncLoop ADD", …): the
//     same text on the wire; "Kubelet does not support snapshot update" is
//     no longer logged.
//
// Messages that do not start with "SyncLoop" are only taken from kubelet.go,
// when the caller is known.

import (
	"strings"

	"github.com/syncloop/syncloop/extractor"
)

// probeKey marks a message shared by the probe cases: the probe="…" value
// says which.
const probeKey = "\x00probe"

type rule struct {
	prefix string
	key    string
	// anyFile: the message is distinctive enough to match without a caller
	// (every "SyncLoop …" message is).
	anyFile bool
}

// builtin is checked in order; the first prefix that matches wins.
var builtin = [...]rule{
	{"SyncLoop (probe)", probeKey, true},
	{"SyncLoop (PLEG)", extractor.KeyPLEG, true},
	{"SyncLoop (SYNC)", extractor.KeySync, true},
	{"SyncLoop (housekeeping", extractor.KeyHousekeeping, true}, // "(housekeeping)", "(housekeeping) end", "(housekeeping, skipped)"
	{"SyncLoop (container unhealthy)", extractor.KeyLiveness, true},
	{"SyncLoop (containermanager)", extractor.KeyContainer, true},
	{"SyncLoop ADD", extractor.KeyConfig, true},
	{"SyncLoop UPDATE", extractor.KeyConfig, true},
	{"SyncLoop REMOVE", extractor.KeyConfig, true},
	{"SyncLoop RECONCILE", extractor.KeyConfig, true},
	{"SyncLoop DELETE", extractor.KeyConfig, true},
	{"SyncLoop (ADD, ", extractor.KeyConfig, true},
	{"SyncLoop (UPDATE, ", extractor.KeyConfig, true},
	{"SyncLoop (REMOVE, ", extractor.KeyConfig, true},
	{"SyncLoop (RECONCILE, ", extractor.KeyConfig, true},
	{"SyncLoop (DELETE, ", extractor.KeyConfig, true},
	{"Update channel is closed", extractor.KeyConfig, false},
	{"Kubelet does not support snapshot update", extractor.KeyConfig, false},
	{"Invalid operation type received", extractor.KeyConfig, false},
	{"Invalid event type received", extractor.KeyConfig, false},
	{"Failed cleaning pods", extractor.KeyHousekeeping, false},
	{"Housekeeping took longer than", extractor.KeyHousekeeping, false},
}

// probeCase maps a probe="…" value to its case key.
func probeCase(probe string) string {
	if extractor.IsProbeKey(probe) {
		return probe
	}
	return ""
}

// builtinKey is the case key of msg by the built-in table; inKubelet says
// the caller is kubelet.go or unknown.
func builtinKey(msg string, inKubelet bool) string {
	if r := builtinRule(msg, inKubelet); r != nil {
		return r.key
	}
	return ""
}

// builtinRule is the rule of the built-in table that msg matches, if any.
func builtinRule(msg string, inKubelet bool) *rule {
	if len(msg) < 12 {
		return nil
	}
	syncLoop := strings.HasPrefix(msg, "SyncLoop ")
	for i := range builtin {
		r := &builtin[i]
		if r.anyFile != syncLoop {
			continue
		}
		if !r.anyFile && !inKubelet {
			return nil
		}
		if strings.HasPrefix(msg, r.prefix) {
			return r
		}
	}
	return nil
}
