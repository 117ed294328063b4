package server

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// The bodies the routes take at most. The notes' handlers bound theirs
// further, by what a note and a room may hold.
const (
	roomFormBytes   = 4 << 10  // POST /rooms: tag=TAG
	classFormBytes  = 4 << 10  // POST /classes (name, budget, tag, hide_notes), its rooms and settings
	noteBodyBytes   = 64 << 10 // PUT a note: its text (8 KB) and quote, as JSON
	localNotesBytes = 4 << 20  // a reader's own notes, all of them, as JSON
)

// routes lists every route of the site, and only here.
//
// Reading pages (package site):
//
//	GET /                         redirect to /k8s/{DefaultTag}/
//	GET /k8s?tag=TAG              the tag switcher's form: redirect to /k8s/TAG/
//	GET /k8s/{tag}                redirect to /k8s/{tag}/
//	GET /k8s/{tag}/               the annotated syncLoopIteration
//	GET /k8s/{tag}/pod-workers    pod_workers.go type comments
//	GET /k8s/{tag}/reading.json   the Reading
//	GET /k8s/{tag}/volume-manager.json  the second reading: the volume manager's reconciler (site/volume.go)
//	GET /k8s/{tag}/volume-manager the second reading's page (site/volume_page.go)
//	GET /k8s/{tag}/volume-manager/def?sym=SYM  a definition the second reading's page opens (site/volume_def.go)
//	GET /k8s/volume-manager/compare?from=A&to=B  its "compare with…" form: redirect to …/compare/A...B
//	GET /k8s/volume-manager/compare/{from}...{to}  the second reading at two tags (site/volume_compare.go)
//	GET /k8s/volume-manager/history/{key}  its entry or a phase at every minor release (site/volume_history.go)
//	GET /k8s/{tag}/volume-manager/answer-key.md  its answer key, 403 in quiz mode (site/volume_room.go)
//	GET /k8s/{tag}/answer-key.md  the site's own answers to the worksheet
//	GET /k8s/{tag}/worksheet.md   the same (its first address)
//	GET /k8s/{tag}/def?sym=SYM    a module symbol's definition, highlighted (def.go)
//
// What changed (package site, compare.go):
//
//	GET /k8s/compare?from=A&to=B  the "compare with…" form: redirect to /k8s/compare/A...B
//	GET /k8s/compare/{from}...{to} the loop's cases at two tags, side by side
//	GET /k8s/history/{key}        one case at every minor release from v1.20.0
//	GET /static/*                 embedded CSS, JS, chroma stylesheet
//
// Live feed (package feeds):
//
//	GET /feeds/{feed}/ws          browser websocket: history then live tail
//	GET /feeds/{feed}/ingest      relay websocket, bearer token
//	PUT|POST /feeds/{feed}/journal a journal streamed in the body (curl -T -), bearer token (journal_http.go)
//	GET /feeds/{feed}/cursor      the last journald cursor stored, bearer token
//	GET /feeds/{feed}/export      the stored journal as NDJSON (?after=SEQ)
//	GET /feeds/{feed}/fired       the record of what fired, per case (fired.go)
//	GET /feeds/{feed}/fired/{case}/lines  a case's stored lines, read back by sequence
//	GET /feeds/{feed}/chains      the volume reading's parts and chains (feeds/chains.go)
//	GET /metrics                  Prometheus metrics: one registry, each part registering its own (metrics.go)
//	GET /healthz                  200 ok, or 503 and why not ready (health.go)
//	GET /livez                    200 ok while the process serves (a liveness probe's)
//
// Pair-reading rooms (package rooms, wired in rooms.go):
//
//	POST /rooms                   create a room; 303 to its driver link /rooms/{id}?k=KEY
//	GET /rooms/{id}               the room: the reading at its tag (the one chosen at POST /rooms reading=, or by its class), presence, the wheel, its feed
//	GET /rooms/{id}/pod-workers   the room's pod_workers page
//	GET /rooms/{id}/ws            the room's websocket: presence, following, steering
//	GET /rooms/{id}/checks.json   the exercise checked on the room's journal (package classes, checklist.go)
//
// Classes (package classes, http.go there; wired in classes.go):
//
//	GET /classes, POST /classes, GET /classes/{id}, POST /classes/{id}/rooms,
//	GET /classes/{id}/pairs.json, GET /classes/{id}/rooms.json, GET /classes/{id}/events,
//	GET /classes/{id}/handins.zip, POST /classes/{id}/settings, POST /classes/{id}/hello,
//	POST /classes/{id}/end, POST /classes/{id}/rooms/{room}/end,
//	GET /classes/{id}/progress.json, GET /classes/{id}/grades.csv,
//	GET /classes/{id}/rooms/{room}/results.json, GET /classes/{id}/items/{item}.json,
//	GET|POST /rooms/{id}/handin, POST /classes/{id}/rooms/{room}/reopen (handin.go there)
//	(progress.go, grades.go, answers.go there)
//
// Readers' own notes (package annotations, http.go there):
//
//	GET /rooms/{id}/notes, /rooms/{id}/notes/events, PUT|DELETE /rooms/{id}/notes/{note},
//	GET /rooms/{id}/notes/{note}/history, GET /rooms/{id}/worksheet.md|.json, POST /rooms/{id}/pins
//	GET /k8s/{tag}/quote, POST /k8s/{tag}/notes, POST /k8s/{tag}/worksheet.md|.json   (no room: nothing stored)
//
// Request bodies: none is read (limitBodies) but where a route above says
// how much it takes (formBody, jsonBody; middleware.go), and a journal's,
// read a line at a time for as long as it lasts (streamBody).
//
// The live endpoints of a room's feed (room-{id}) answer only while the
// room lives, and its ingest takes the room's own token.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(securityHeaders, logRequests(s.log), limitBodies, middleware.GetHead)
	notFound := s.site.NotFound()
	r.NotFound(notFound.ServeHTTP)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httperr.Text(w, errMethod)
	})

	r.Method("GET", "/", s.site.Root())
	r.Method("GET", "/k8s", s.site.Switch())
	r.Method("GET", "/k8s/{tag}", s.site.Slash())
	r.Method("GET", "/k8s/{tag}/", s.site.TagPage(site.PageIndex))
	r.Method("GET", "/k8s/{tag}/pod-workers", s.site.TagPage(site.PagePodWorkers))
	r.Method("GET", "/k8s/{tag}/reading.json", s.site.TagPage(site.PageJSON))
	s.volumeRoutes(r)
	r.Method("GET", "/k8s/{tag}/volume-manager/answer-key.md", s.site.VolumeAnswerKey())
	r.Method("GET", "/k8s/{tag}/worksheet.md", s.site.TagPage(site.PageWorksheet))
	r.Method("GET", "/k8s/{tag}/def", s.site.Def())
	r.Method("GET", "/k8s/{tag}/answer-key.md", s.site.TagPage(site.PageAnswerKey))
	r.Method("GET", "/k8s/compare", s.site.CompareForm())
	r.Method("GET", "/k8s/compare/{range}", s.site.Compare())
	r.Method("GET", "/k8s/history/{key}", s.site.History())
	r.Method("GET", "/static/*", s.site.Static(notFound))

	r.Method("GET", "/feeds/{feed}/ws", s.live.HandleFeedSocket())
	r.Method("GET", "/feeds/{feed}/ingest", s.live.HandleIngest())
	for _, m := range []string{"PUT", "POST"} {
		r.With(streamBody).Method(m, "/feeds/{feed}/journal", s.live.HandleJournal())
	}
	r.Method("GET", "/feeds/{feed}/cursor", s.live.HandleCursor())
	r.With(jsonBody(8<<10)).Method("POST", "/feeds/{feed}/timing", s.live.HandleTiming())
	r.Method("GET", "/feeds/{feed}/export", s.live.HandleExport())
	r.Method("GET", "/feeds/{feed}/fired", s.live.HandleFired())
	r.Method("GET", "/feeds/{feed}/fired/{case}/lines", s.live.HandleCaseLines())
	r.Method("GET", "/feeds/{feed}/chains", s.live.HandleChains())
	r.Method("GET", "/metrics", s.handleMetrics())
	r.Method("GET", "/healthz", s.handleHealthz())
	r.Method("GET", "/livez", s.handleLivez())

	r.With(formBody(roomFormBytes)).Method("POST", "/rooms", s.rooms.Create())
	r.Method("GET", "/rooms/{id}", s.rooms.Page(rooms.PageIndex))
	r.Method("GET", "/rooms/{id}/pod-workers", s.rooms.Page(rooms.PagePodWorkers))
	r.Method("GET", "/rooms/{id}/ws", s.rooms.Socket())

	r.Method("GET", "/classes", s.classes.New())
	r.With(formBody(classFormBytes)).Method("POST", "/classes", s.classes.Create())
	r.Method("GET", "/classes/{id}", s.classes.Page())
	r.With(formBody(classFormBytes)).Method("POST", "/classes/{id}/rooms", s.classes.StartRoom())
	r.Method("GET", "/classes/{id}/pairs.json", s.classes.Pairs())
	r.Method("GET", "/classes/{id}/rooms.json", s.classes.RoomsJSON())
	r.Method("GET", "/classes/{id}/events", s.classes.Events())
	r.Method("GET", "/classes/{id}/handins.zip", s.classes.Handins())
	r.With(jsonBody(classFormBytes)).Method("POST", "/classes/{id}/settings", s.classes.Settings())
	r.With(jsonBody(classFormBytes)).Method("POST", "/classes/{id}/hello", s.classes.Hello())
	r.With(jsonBody(classFormBytes)).Method("POST", "/classes/{id}/end", s.classes.End())
	r.With(jsonBody(classFormBytes)).Method("POST", "/classes/{id}/rooms/{room}/end", s.classes.EndRoom())
	r.Method("GET", "/classes/{id}/progress.json", s.classes.ProgressJSON())
	r.Method("GET", "/classes/{id}/grades.csv", s.classes.GradesCSV())
	r.Method("GET", "/classes/{id}/rooms/{room}/results.json", s.classes.Results())
	r.Method("GET", "/classes/{id}/items/{item}", s.classes.ItemAnswers())
	r.With(jsonBody(classFormBytes)).Method("POST", "/classes/{id}/rooms/{room}/reopen", s.classes.Reopen())
	r.Method("GET", "/rooms/{id}/handin", s.classes.HandInState())
	r.With(jsonBody(classFormBytes)).Method("POST", "/rooms/{id}/handin", s.classes.HandIn())

	r.Method("GET", "/rooms/{id}/notes", s.notes.List())
	r.Method("GET", "/rooms/{id}/notes/events", s.notes.Events())
	r.With(jsonBody(noteBodyBytes)).Method("PUT", "/rooms/{id}/notes/{note}", s.notes.Put())
	r.Method("DELETE", "/rooms/{id}/notes/{note}", s.notes.Delete())
	r.Method("GET", "/rooms/{id}/notes/{note}/history", s.notes.History())
	r.Method("GET", "/rooms/{id}/worksheet.md", s.notes.RoomWorksheet())
	r.With(jsonBody(noteBodyBytes)).Method("POST", "/rooms/{id}/pins", s.notes.Pin())
	r.Method("GET", "/rooms/{id}/checks.json", s.classes.Checklist())
	r.Method("GET", "/rooms/{id}/worksheet.json", s.notes.RoomPaper())
	r.Method("GET", "/k8s/{tag}/quote", s.notes.Quote())
	r.With(jsonBody(localNotesBytes)).Method("POST", "/k8s/{tag}/notes", s.notes.LocalViews())
	r.With(jsonBody(localNotesBytes)).Method("POST", "/k8s/{tag}/worksheet.md", s.notes.LocalWorksheet())
	r.With(jsonBody(localNotesBytes)).Method("POST", "/k8s/{tag}/worksheet.json", s.notes.LocalPaper())
	return r
}

// volumeRoutes are the second reading's: the volume manager's reconciler.
func (s *Server) volumeRoutes(r chi.Router) {
	r.Method("GET", "/k8s/{tag}/volume-manager.json", s.site.VolumeJSON())
	r.Method("GET", "/k8s/{tag}/volume-manager", s.site.VolumePage())
	r.Method("GET", "/k8s/{tag}/volume-manager/def", s.site.VolumeDef())
	r.Method("GET", "/k8s/volume-manager/compare", s.site.VolumeCompareForm())
	r.Method("GET", "/k8s/volume-manager/compare/{range}", s.site.VolumeCompare())
	r.Method("GET", "/k8s/volume-manager/history/{key}", s.site.VolumeHistory())
}
