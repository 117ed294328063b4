package rooms

// Who a reader is, as the server knows them: their browser's reader
// cookie (any room), or their class's session (a class's room, asked of
// ServiceConfig.Student). A note is signed with this name, never with one
// a request body gives (ReaderName).

import "net/http"

// ReaderCookie is the cookie a browser is known by in rooms of no class:
// a random token, HttpOnly, set by a room's page and its socket when the
// browser has none. A room's record keeps only its hash (Room.Names).
const ReaderCookie = "syncloop-reader"

// readerCookie is the hash of r's reader cookie, set on w when r has
// none (before w's header is written).
func readerCookie(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(ReaderCookie); err == nil && ValidID(c.Value) {
		return hashKey(c.Value)[:32]
	}
	tok, err := NewSecret()
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: ReaderCookie, Value: tok, Path: "/", MaxAge: 30 * 24 * 3600,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	// The request goes on to be answered with it.
	r.AddCookie(&http.Cookie{Name: ReaderCookie, Value: tok})
	return hashKey(tok)[:32]
}

// ReaderName is the name r's reader goes by in room (a room of no class:
// the name their browser gave there), "" when it gave none.
func ReaderName(r *http.Request, room Room) string {
	c, err := r.Cookie(ReaderCookie)
	if err != nil || !ValidID(c.Value) {
		return ""
	}
	return room.NameOf(hashKey(c.Value)[:32])
}

// identity is who a socket's reader is (roomReader's fields of the same
// names).
type identity struct {
	cookie, student, studentID string
}

// identify is who r's reader is in room, setting their reader cookie on w
// when they have none.
func (rs *Service) identify(w http.ResponseWriter, r *http.Request, room Room) identity {
	id := identity{cookie: readerCookie(w, r)}
	if room.Class != "" && rs.student != nil {
		if sid, name, err := rs.student(r, room.Class); err == nil {
			id.studentID, id.student = sid, name
		}
	}
	return id
}
