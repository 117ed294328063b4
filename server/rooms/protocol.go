package rooms

// The room websocket's protocol (GET /rooms/{id}/ws, same origin only):
// presence, the wheel, and the driver's position. Every message is one
// JSON object with a type "t"; each has its type here, both ways.
//
// Browser → server (roomIn):
//
//	{"t":"join","name":"Ann","color":3,"key":"<driver key, or absent>","wheel":"<wheel ticket, or absent>","watch":false}   first
//	{"t":"name","name":"Ann","color":3}
//	{"t":"at","page":"index","case":"pleg","lo":0,"hi":0,"first":2790,"last":2830,"where":"case-pleg","per":420}  steer (driver)
//	{"t":"follow","on":false}
//	{"t":"hand","to":"r3"}      give the wheel to reader r3 (driver)
//	{"t":"take"}                take the wheel (driver key holders)
//	{"t":"tag","tag":"v1.31.0"} switch the room's tag (driver)
//	{"t":"rotate"}              new ingest token (driver key holders)
//	{"t":"end"}                 end the room: its notes turn read-only, its feed takes no relay (the driver, or key holders)
//
// Server → browser:
//
//	{"t":"welcome","you":"r2","key":true,"wheel":false,"feed":"room-…","token":"…"}   token only with the key
//	{"t":"wheel","wheel":"…"}   the ticket of the wheel handed to this reader; "" when it was taken back or handed on
//	{"t":"state","tag","driver","at","kubelet_version","ended","readers":[{"id","name","color","key","driving","following"}]}
//	{"t":"at","at":{…}}   the driver moved (the state's "at", alone)
//	{"t":"token","token":"…"}   after a rotation, to key holders
//	{"t":"note","note":"…"}     what the server is doing for this reader (loading a tag)
//	{"t":"reload","tag":"v1.31.0"}   the room's tag changed: load the page again
//	{"t":"error","error":"…"}   the message was refused; nothing changed
//
// A socket closed for good has a close code a page reads, and then stops
// reconnecting (static/room.js knows the same numbers).

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/names"
)

// Websocket close codes. The permanent refusals are 4000 plus the HTTP
// status that says the same: a page that sees one stops reconnecting.
const (
	CloseGone                      = feeds.CloseGone // the room expired (its feed's sockets close with the same)
	CloseFull websocket.StatusCode = 4429            // the room holds as many readers as it may
	// CloseTooSlow: the reader's messages piled up unsent; its page
	// reconnects and starts from the room's state.
	CloseTooSlow = websocket.StatusPolicyViolation
	// CloseShutdown: the server is going away; the page reconnects.
	CloseShutdown = websocket.StatusGoingAway
)

// The types of message from a browser.
const (
	inJoin   = "join"
	inName   = "name"
	inAt     = "at"
	inFollow = "follow"
	inHand   = "hand"
	inTake   = "take"
	inTag    = "tag"
	inRotate = "rotate"
	inEnd    = "end"
)

// roomIn is any message from a browser.
type roomIn struct {
	T     string `json:"t"`
	Name  string `json:"name"`
	Color int    `json:"color"`
	Key   string `json:"key"`
	Wheel string `json:"wheel"`
	On    bool   `json:"on"`
	To    string `json:"to"`
	Tag   string `json:"tag"`
	// Watch (in a join): an instructor's read-only watch (room.js's
	// ?ro=1): present, never one of the room's readers.
	Watch bool `json:"watch"`
	position
}

// position is where the driver is: the selected case and lines, and the
// lines in view (not pixels: screens differ).
type position struct {
	Page  string `json:"page,omitempty"` // "index" (the function), "pod-workers" or "volume-manager"
	Case  string `json:"case,omitempty"`
	Lo    int    `json:"lo,omitempty"` // highlighted lines, when some are
	Hi    int    `json:"hi,omitempty"`
	First int    `json:"first,omitempty"` // the first and last source lines in view
	Last  int    `json:"last,omitempty"`
	Where string `json:"where,omitempty"` // the case block or section read (an element id)
	Per   int    `json:"per,omitempty"`   // how far into Where, per mille of its height
}

var (
	caseKeyRE = regexp.MustCompile(extractor.CaseKeyPattern)
	whereRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{0,64}$`) // an element id: "two-sets", "type-podWorkers"
)

func (p position) valid() bool {
	ok := func(n int) bool { return n >= 0 && n < 1e7 }
	return (p.Page == "" || p.Page == PageIndex || p.Page == PagePodWorkers || p.Page == PageVolume) &&
		(p.Case == "" || caseKeyRE.MatchString(p.Case)) && whereRE.MatchString(p.Where) &&
		ok(p.Lo) && ok(p.Hi) && ok(p.First) && ok(p.Last) && p.Per >= 0 && p.Per <= 1000
}

// cleanName is a reader's name as shown: printable, at most 32 characters.
// Controls, bidirectional overrides and isolates (which would make a name
// read otherwise on the others' pages, "Bob(uoy)"), zero-width and other
// invisible characters are removed (names.Clean).
func cleanName(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	name := names.Clean(s)
	if name == "" || utf8.RuneCountInString(name) > 32 {
		return "", false
	}
	return name, true
}

// welcomeOut is the first message to a reader: who they are in the room.
type welcomeOut struct {
	T     string `json:"t"`
	You   string `json:"you"`
	Feed  string `json:"feed"`
	Key   bool   `json:"key"`
	Wheel bool   `json:"wheel"`
	Token string `json:"token,omitempty"` // only to a key holder
}

// readerJSON is a reader as the state lists them.
type readerJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Color     int    `json:"color"`
	Key       bool   `json:"key"`
	Driving   bool   `json:"driving"`
	Following bool   `json:"following"`
	// Unlisted: an instructor watching, or in a class's room someone
	// without the class's session: present, but no reader of the room.
	Unlisted bool `json:"unlisted,omitempty"`
}

// stateOut is the room as everyone in it sees it.
type stateOut struct {
	T              string       `json:"t"`
	Tag            string       `json:"tag"`
	Driver         string       `json:"driver"`
	At             *position    `json:"at"`
	KubeletVersion string       `json:"kubelet_version"`
	Ended          bool         `json:"ended"`
	Readers        []readerJSON `json:"readers"`
}

type atOut struct {
	T  string   `json:"t"`
	At position `json:"at"`
}

type wheelOut struct {
	T     string `json:"t"`
	Wheel string `json:"wheel"`
}

type tokenOut struct {
	T     string `json:"t"`
	Token string `json:"token"`
}

type noteOut struct {
	T    string `json:"t"`
	Note string `json:"note"`
}

type reloadOut struct {
	T   string `json:"t"`
	Tag string `json:"tag"`
}

type errorOut struct {
	T     string `json:"t"`
	Error string `json:"error"`
}

// The messages to browsers, encoded.

func welcomeMsg(w welcomeOut) []byte { w.T = "welcome"; return mustJSON(w) }
func stateMsg(s stateOut) []byte     { s.T = "state"; return mustJSON(s) }
func atMsg(p position) []byte        { return mustJSON(atOut{"at", p}) }
func wheelMsg(ticket string) []byte  { return mustJSON(wheelOut{"wheel", ticket}) }
func tokenMsg(token string) []byte   { return mustJSON(tokenOut{"token", token}) }
func noteMsg(note string) []byte     { return mustJSON(noteOut{"note", note}) }
func reloadMsg(tag string) []byte    { return mustJSON(reloadOut{"reload", tag}) }

func errMsg(format string, args ...any) []byte {
	return mustJSON(errorOut{"error", fmt.Sprintf(format, args...)})
}

// mustJSON marshals what cannot fail to marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
