package classify

// journal.go reads journalctl's text outputs: short ("Nov 30 01:02:03 host
// kubelet[1234]: msg", the default of `journalctl -u kubelet -f`),
// short-precise (with microseconds), short-iso ("2026-11-30T01:02:03+0000"),
// short-iso-precise, short-full ("Mon 2026-11-30 01:02:03 UTC"),
// short-unix ("1764464523.123456") and short-monotonic ("[ 1234.567890]"). `-o cat` is the bare message, read as
// klog text or kubelet JSON directly.

import (
	"strconv"
	"strings"
	"time"
)

// journalText is the prefix of a journalctl short-* line.
type journalText struct {
	time   time.Time // with a zero year when the output has none
	noYear bool
	host   string
	ident  string
	pid    int
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parseJournalText splits s into its journalctl prefix and the message.
func parseJournalText(s string, loc *time.Location) (j journalText, msg string, ok bool) {
	rest, ok := j.parseTime(s, loc)
	if !ok || len(rest) < 2 || rest[0] != ' ' {
		return j, "", false
	}
	rest = rest[1:]
	sp := strings.IndexByte(rest, ' ')
	if sp <= 0 {
		return j, "", false
	}
	j.host, rest = rest[:sp], rest[sp+1:]
	// "kubelet[1234]: msg" or "kubelet: msg"
	colon := strings.Index(rest, ": ")
	if colon <= 0 {
		if strings.HasSuffix(rest, ":") {
			colon = len(rest) - 1 // an empty message
		} else {
			return j, "", false
		}
	}
	id := rest[:colon]
	if strings.IndexByte(id, ' ') >= 0 {
		return j, "", false
	}
	if b := strings.IndexByte(id, '['); b >= 0 {
		if !strings.HasSuffix(id, "]") {
			return j, "", false
		}
		pid, err := strconv.Atoi(id[b+1 : len(id)-1])
		if err != nil {
			return j, "", false
		}
		j.pid, id = pid, id[:b]
	}
	j.ident = id
	if colon+2 <= len(rest) {
		msg = rest[colon+2:]
	}
	return j, msg, true
}

// parseTime reads the timestamp s starts with and returns what follows it.
func (j *journalText) parseTime(s string, loc *time.Location) (string, bool) {
	if len(s) < 15 {
		return "", false
	}
	switch {
	case s[0] == '[': // short-monotonic: "[ 1234.567890]", seconds since boot
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", false
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(s[1:end]), 64); err != nil {
			return "", false
		}
		return s[end+1:], true // no wall-clock time: the message's own is used
	case s[0] >= 'A' && s[0] <= 'Z' && s[3] == ' ' && s[8] == '-': // "Mon 2026-11-30 01:02:03 UTC"
		rest, ok := j.isoDate(s[4:], ' ', loc)
		if !ok || len(rest) < 2 || rest[0] != ' ' {
			return "", false
		}
		// The zone is an abbreviation (UTC, CET): keep the wall clock in loc
		// unless it names UTC.
		sp := strings.IndexByte(rest[1:], ' ')
		if sp < 0 {
			return "", false
		}
		if z := rest[1 : 1+sp]; z == "UTC" || z == "GMT" {
			j.time = time.Date(j.time.Year(), j.time.Month(), j.time.Day(), j.time.Hour(), j.time.Minute(), j.time.Second(), j.time.Nanosecond(), time.UTC)
		}
		return rest[1+sp:], true
	case s[0] >= 'A' && s[0] <= 'Z': // "Nov 30 01:02:03[.123456]"
		mo := 0
		for i, m := range months {
			if s[:3] == m {
				mo = i + 1
			}
		}
		if mo == 0 || s[3] != ' ' {
			return "", false
		}
		day, ok := digits(strings.TrimLeft(s[4:6], " "))
		if !ok || s[6] != ' ' {
			return "", false
		}
		clock, rest, ok := clockOf(s[7:])
		if !ok {
			return "", false
		}
		j.noYear = true
		j.time = time.Date(0, time.Month(mo), day, 0, 0, 0, 0, loc).Add(clock)
		return rest, true
	case s[0] >= '0' && s[0] <= '9' && s[4] == '-': // "2026-11-30T01:02:03+0000"
		return j.isoDate(s, 'T', loc)
	case s[0] >= '0' && s[0] <= '9': // "1764464523.123456"
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		f, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || f < 1e8 || f > 1e11 {
			return "", false
		}
		sec := int64(f)
		j.time = time.Unix(sec, int64((f-float64(sec))*1e9)).Round(time.Microsecond).In(loc)
		return s[i:], true
	}
	return "", false
}

// isoDate reads "2026-11-30<sep>01:02:03[.123456][zone]" where zone is
// "+0000", "+00:00" or "Z"; without a zone, the time is in loc.
func (j *journalText) isoDate(s string, sep byte, loc *time.Location) (string, bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[10] != sep {
		return "", false
	}
	y, ok1 := digits(s[0:4])
	mo, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !(ok1 && ok2 && ok3) || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return "", false
	}
	clock, rest, ok := clockOf(s[11:])
	if !ok {
		return "", false
	}
	zone := loc
	switch {
	case strings.HasPrefix(rest, "Z"):
		zone, rest = time.UTC, rest[1:]
	case len(rest) >= 5 && (rest[0] == '+' || rest[0] == '-'):
		z := rest[1:]
		n := 4
		if len(z) >= 5 && z[2] == ':' {
			z = z[:2] + z[3:5]
			n = 5
		}
		hh, okh := digits(z[:2])
		mm, okm := digits(z[2:4])
		if !okh || !okm || hh > 14 || mm > 59 {
			return "", false
		}
		off := hh*3600 + mm*60
		if rest[0] == '-' {
			off = -off
		}
		zone, rest = time.FixedZone("", off), rest[1+n:]
	}
	j.time = time.Date(y, time.Month(mo), d, 0, 0, 0, 0, zone).Add(clock)
	return rest, true
}

// clockOf reads "01:02:03[.123456]".
func clockOf(s string) (time.Duration, string, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, "", false
	}
	hh, ok1 := digits(s[0:2])
	mm, ok2 := digits(s[3:5])
	ss, ok3 := digits(s[6:8])
	if !(ok1 && ok2 && ok3) || hh > 23 || mm > 59 || ss > 60 {
		return 0, "", false
	}
	d := time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second
	rest := s[8:]
	if len(rest) > 1 && rest[0] == '.' {
		i := 1
		frac := 0
		scale := int64(time.Second)
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if scale > 1 {
				scale /= 10
				frac += int(rest[i]-'0') * int(scale)
			}
			i++
		}
		d += time.Duration(frac)
		rest = rest[i:]
	}
	return d, rest, true
}
