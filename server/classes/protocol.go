package classes

// What the class's pages and its instructor's stream read.
//
//	GET /classes/{id}/pairs.json    (the students' page) {"rooms":[Pair…],"budget":N,"held":N}
//	GET /classes/{id}/rooms.json    (Authorization: Bearer KEY) Overview
//	POST /classes/{id}/hello        {"name":NAME} → {"name","seen"}: a student's name for the roster
//	                                (the class page, on a name and every minute); without the
//	                                class's session cookie it makes one (session.go); 409 for a
//	                                full roster or a name that looks like another student's
//	POST /classes/{id}/end          (same key) end the class and all its rooms → ClassJSON
//	POST /classes/{id}/rooms/{room}/end (same key) end one room of the class → {"id","ended"}
//	GET /classes/{id}/events        (Authorization: Bearer KEY) text/event-stream:
//	                                an "overview" event (data: Overview) at once and whenever it
//	                                changes (looked at every Config.Tick); a ping comment every 25 s
//	                                (clients.Events); it holds one of the client's
//	                                --sockets-per-client.
//	                                The page reads it with fetch, which can send the key in a
//	                                header (an EventSource cannot).

import "time"

// RoomRow is one room of a class as its instructor sees it.
type RoomRow struct {
	ID      string   `json:"id"`
	Tag     string   `json:"tag"`
	Readers []string `json:"readers"` // names of who is in it now
	Driver  string   `json:"driver"`  // the name of who drives, "" when no one does
	// Authors are the names its notes were written under: who worked in
	// it, present or not.
	Authors []string `json:"authors"`
	// Relay: a relay feeds the room's journal now; KubeletVersion is the
	// version its journal reported ("" until it reports one).
	Relay          bool   `json:"relay"`
	KubeletVersion string `json:"kubelet_version"`
	// Fired is how many lines of each case the room's journal fired: a
	// journal's lines only, never the demo's.
	Fired map[string]int `json:"fired"`
	// Written is how many of the worksheet's items have an answer (of
	// Expected); Checked how many of those the checker confirms (a
	// writer that resolves, a set at its file:line).
	Written  int       `json:"written"`
	Checked  int       `json:"checked"`
	Expected int       `json:"expected"`
	Ended    bool      `json:"ended"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"` // its last activity: a reader present, a note written
}

// ClassJSON is the class as its instructor's page shows it.
type ClassJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Tag       string `json:"tag"`
	Reading   string `json:"reading,omitempty"` // "volume-manager": the rooms read the volume manager (Class.Reading)
	Budget    int    `json:"budget"`
	HideNotes bool   `json:"hide_notes"`
	Pod       string `json:"pod"` // the exercise's pod, as the lab checks look for it
	// Ended is when the instructor ended the class; absent while it runs.
	Ended time.Time `json:"ended,omitzero"`
	// Due, Extensions and Release are the class's deadline, its rooms'
	// extra minutes and when the site's notes are released (handin.go).
	Due        time.Time      `json:"due,omitzero"`
	Extensions map[string]int `json:"extensions,omitempty"`
	Release    string         `json:"release,omitempty"`
}

// Overview is every room of a class, oldest first, and its students.
type Overview struct {
	Class ClassJSON `json:"class"`
	Rooms []RoomRow `json:"rooms"`
	// Students is the roster, by name: every reader of a room, and every
	// name given on the class page that is in no room now (Room "").
	Students []StudentRow `json:"students"`
}

// StudentRow is one student on the instructor's roster.
type StudentRow struct {
	Name    string `json:"name"`
	Room    string `json:"room"` // the room they are in now; "" when none
	Driving bool   `json:"driving"`
	// Seen is when their class page last said hello (every minute while
	// it is open); absent for a reader who never gave a name there.
	Seen time.Time `json:"seen,omitzero"`
	// Gone: in no room, and their class page has not said hello for
	// GoneAfter (the tab closed, the phone put away).
	Gone bool `json:"gone,omitempty"`
	// Wrote are the rooms whose worksheet has a note under this name.
	Wrote []string `json:"wrote"`
}

// Pair is a room as the students' page lists it: who is in it, so that a
// student finds their partner's.
type Pair struct {
	ID      string    `json:"id"`
	Tag     string    `json:"tag"`
	Readers []string  `json:"readers"`
	Driver  string    `json:"driver"`
	Ended   bool      `json:"ended"`
	Created time.Time `json:"created"`
}

// Pairs is the students' page's list.
type Pairs struct {
	Rooms  []Pair `json:"rooms"`
	Budget int    `json:"budget"`
	Held   int    `json:"held"`
	Ended  bool   `json:"ended"` // the instructor ended the class
}
