// Package classes is a course's class: an instructor makes one, students
// open its link, give a name and start or join a pair room of it (package
// rooms), and the instructor sees every room of the class live and takes
// every hand-in at once. The class's record (this file) and its bucket
// (store.go), the overview of its rooms (overview.go), what the pages and
// the instructor's stream say (protocol.go) and the HTTP side (http.go).
//
// A class is a key of a JetStream KV bucket (syncloop_classes), so every
// replica serves it. Capabilities are random strings of 128 bits, as a
// room's are:
//
//   - the class id is the students' link (/classes/{id}): whoever holds it
//     starts a room of the class, joins one, sees who is in which;
//   - the instructor key (/classes/{id}?k=KEY, then Authorization: Bearer
//     KEY) opens the overview, the hand-ins and the settings; only its
//     SHA-256 is stored. The instructor page keeps it in its tab's
//     sessionStorage and takes it out of the address, as a room's page does
//     a driver key.
//
// A class lives TTL after its instructor last looked at it. Its rooms are
// rooms like any other (they expire as rooms do), but they count against
// the class's caps instead of their owner address's (rooms.ClassPlace:
// the class's budget, its creator's allowance, its student's share, and
// --max-rooms less a reserve), and only a student of the class (a session,
// session.go) starts one or writes in one. While the instructor's page is
// open they are kept alive, ended ones included, so that every hand-in
// can still be downloaded: an ended room holds none of the caps' places.
package classes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/syncloop/syncloop/server/names"
)

// Defaults and limits of a class.
const (
	DefaultBudget = 30 // rooms of one class at once
	DefaultTTL    = 7 * 24 * time.Hour
	maxName       = 80
	maxStudent    = 32  // a student's name, as a room's reader name
	MaxStudents   = 200 // names on one class's roster
	// DefaultAnonBudget is how many rooms a class made without the
	// server's class token holds, and all the classes of its creator's
	// address together.
	DefaultAnonBudget = 12
	// DefaultPerStudent is how many open rooms of a class one student holds.
	DefaultPerStudent = 2
)

// Errors a caller turns into pages.
var (
	ErrNotFound = errors.New("no such class")
	ErrEnded    = errors.New("this class has ended")
	ErrRoster   = fmt.Errorf("this class's roster holds %d names at most", MaxStudents)
	ErrBadKey   = errors.New("not this class's instructor key")
)

// Class is the record of a class.
type Class struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	KeyHash string `json:"instructor_key_sha256"`
	// Tag is the tag a room of the class starts at.
	Tag string `json:"tag"`
	// Reading is what the class's rooms read (rooms.Room.Reading): "" for
	// syncLoopIteration, rooms.ReadingVolume for the volume manager.
	Reading string `json:"reading,omitempty"`
	// Budget is how many rooms of the class may be held at once (the
	// rooms' own cap on the whole server still applies).
	Budget int `json:"budget"`
	// HideNotes: the class's room pages are served without the site's
	// notes and answer key (the students write their own).
	HideNotes bool `json:"hide_notes"`
	// Creator is the hash of the client that made the class without the
	// server's class token, "" when it presented the token: all of its
	// classes' rooms together count against Allowance (rooms.ClassPlace).
	Creator   string `json:"creator_sha256,omitempty"`
	Allowance int    `json:"allowance,omitempty"`
	// Pod is the exercise's pod the lab checks look for ("": probe-me).
	Pod        string    `json:"pod,omitempty"`
	Created    time.Time `json:"created"`
	LastActive time.Time `json:"last_active"`
	// Ended is when the instructor ended the class (zero while it runs):
	// its rooms ended with it, it starts no more, and its hand-ins stay
	// downloadable until the class expires.
	Ended time.Time `json:"ended,omitzero"`
	// Due is when the class's rooms are due (zero: no deadline), and
	// Extensions each room's extra minutes; Release when the site's
	// notes are shown to a class that hides them: ReleaseNow, ReleaseDue
	// or "" (not until the instructor releases them). handin.go.
	Due        time.Time      `json:"due,omitzero"`
	Extensions map[string]int `json:"extensions,omitempty"`
	Release    string         `json:"release,omitempty"`
}

// Student is a name a student gave on the class page, as the roster
// shows it. A student is one session (session.go): a random id the server
// gave with it; Seen is when their class page last said hello.
type Student struct {
	ID   string    `json:"-"`
	Name string    `json:"name"`
	Seen time.Time `json:"seen"`
}

// Settings is what the instructor may change of a class.
type Settings struct {
	Name      *string `json:"name,omitempty"`
	Budget    *int    `json:"budget,omitempty"`
	HideNotes *bool   `json:"hide_notes,omitempty"`
	Pod       *string `json:"pod,omitempty"`
	// Due is an RFC 3339 time or "" (no deadline); Extensions replace
	// the rooms' extensions ({room: minutes}); Release is "now", "due"
	// or "" (handin.go).
	Due        *string        `json:"due,omitempty"`
	Extensions map[string]int `json:"extensions,omitempty"`
	Release    *string        `json:"release,omitempty"`
}

// apply checks s and applies it to c; maxBudget is the server's cap on
// rooms.
func (s Settings) apply(c *Class, maxBudget int) error {
	if s.Name != nil {
		n, err := CleanName(*s.Name)
		if err != nil {
			return err
		}
		c.Name = n
	}
	if s.Budget != nil {
		if *s.Budget < 1 || *s.Budget > maxBudget {
			if c.Creator != "" {
				return fmt.Errorf("a class holds 1 to %d rooms without this server's class token (serve --class-token); ask whoever runs it for the token to hold more", maxBudget)
			}
			return fmt.Errorf("a class holds 1 to %d rooms (this server's cap: serve --max-rooms, less the rooms kept for pairs outside classes)", maxBudget)
		}
		c.Budget = *s.Budget
	}
	if s.HideNotes != nil {
		c.HideNotes = *s.HideNotes
	}
	if s.Pod != nil {
		p, err := CleanPod(*s.Pod)
		if err != nil {
			return err
		}
		c.Pod = p
	}
	return s.applyDeadline(c)
}

// CleanName is a class's name as shown: names.Clean's (NFC, no
// direction, format or zero-width characters, spaces folded), printable,
// at most 80 characters; "" is a class with no name.
func CleanName(s string) (string, error) {
	for _, r := range s {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "", errors.New("a class's name is printable text: no control characters")
		}
	}
	s = names.Clean(s)
	if utf8.RuneCountInString(s) > maxName {
		return "", fmt.Errorf("a class's name is at most %d characters", maxName)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "", errors.New("a class's name is printable text: no control or direction characters")
		}
	}
	return s, nil
}

// CleanStudent is a student's name as the roster shows it: as CleanName,
// at most 32 characters, not empty.
func CleanStudent(s string) (string, error) {
	n, err := CleanName(s)
	switch {
	case err != nil:
		return "", errors.New("a name is printable text on one line: no control or direction characters")
	case n == "":
		return "", errors.New("give your name")
	case utf8.RuneCountInString(n) > maxStudent:
		return "", fmt.Errorf("a name is at most %d characters", maxStudent)
	}
	return n, nil
}

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
