// Package redact masks the secrets a log line or an error message could
// carry, so that whoever reads the logs cannot join a room or a cluster:
// a room's id (its viewer link) after /rooms/ or room-, a key, token or
// ticket in a query string, and a URL's password or token
// (nats://user:pass@host, nats://token@host).
//
// A room's id keeps its first six characters ("/rooms/AbCdEf…"), enough
// to tell rooms apart in the logs, as the rooms' own log lines do.
package redact

import (
	"regexp"
	"strings"
)

// Mask is what stands for a secret.
const Mask = "…"

var (
	// A room id is 22 base64url characters (rooms.ValidID).
	roomRE = regexp.MustCompile(`(/rooms/|room-)([A-Za-z0-9_-]{6})[A-Za-z0-9_-]{16}`)
	// A capability in a query: a driver key, a relay token, a wheel ticket.
	queryRE = regexp.MustCompile(`([?&;](?:k|key|token|ticket|password|pass)=)[^&;\s"'<>]+`)
	// A URL's user info: user:password@ or token@.
	userRE = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@\s:"']*)(:[^/@\s"']*)?@`)
)

// String masks the secrets in s.
func String(s string) string {
	if strings.Contains(s, "room") {
		s = roomRE.ReplaceAllString(s, "${1}${2}"+Mask)
	}
	if strings.Contains(s, "=") {
		s = queryRE.ReplaceAllString(s, "${1}"+Mask)
	}
	if strings.Contains(s, "@") {
		s = userRE.ReplaceAllStringFunc(s, func(m string) string {
			sm := userRE.FindStringSubmatch(m)
			if sm[3] != "" { // user:password: the user may be seen
				return sm[1] + sm[2] + ":" + Mask + "@"
			}
			return sm[1] + Mask + "@" // a lone user is a token
		})
	}
	return s
}
