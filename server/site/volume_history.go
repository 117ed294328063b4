package site

// /k8s/volume-manager/history/KEY: the second reading's entry ("entry") or
// one phase at every minor release from v1.20.0 to the default tag's
// minor, under whatever name and in whatever file it had at each, each
// turn linked to the compare with the minor before.

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/volume"
)

// volumeHistoryView is a unit's history page.
type volumeHistoryView struct {
	H     *diff.VolumeHistory
	Title string
	Note  noteView
	Steps []volumeHistoryStep
	Facts []string // one sentence per turn
	Keys  []string // the other units, for links
}

type volumeHistoryStep struct {
	diff.VolumeStep
	Status  string // "added", "removed", "changed", "same" against the minor before; "" for the first
	Changed string // what changed, in words
	Short   string // the same in a word each: "moved, renamed, body"
	Compare string // the compare with the minor before, at this unit
}

var unitKeyRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)

// VolumeHistory serves /k8s/volume-manager/history/KEY.
func (s *Site) VolumeHistory() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := chi.URLParam(r, "key")
		if stable, ok := olderNames()[key]; ok {
			key = stable
		}
		if !unitKeyRE.MatchString(key) {
			s.statusPage(w, r, http.StatusNotFound, pageData{Heading: fmt.Sprintf("%q names no phase", key),
				Message: "A phase is named by its method, e.g. mountOrAttachVolumes; the entry is \"entry\".",
				Advice:  "Follow a phase's history link on the volume manager's page."})
			return
		}
		tags := diff.MinorTags(s.cfg.DefaultTag)
		rs, ok := s.volumeReadings(w, r, key, tags)
		if !ok {
			return
		}
		h := diff.NewVolumeHistory(key, rs, olderNames())
		if !slices.ContainsFunc(h.Tags, func(st diff.VolumeStep) bool { return st.Unit != nil }) {
			s.statusPage(w, r, http.StatusNotFound, pageData{Heading: "No phase " + key,
				Message: fmt.Sprintf("No minor release from %s to %s has a phase %q in the volume reconciler's pass.", tags[0], tags[len(tags)-1], key),
				Advice:  "Phases are named for their method: see the volume manager's page for the names at a tag."})
			return
		}
		quiz := s.quiz(r)
		v, err := newVolumeHistoryView(h, rs[len(rs)-1], quiz)
		var body []byte
		if err == nil {
			tagsList, _ := s.readableTags()
			body, err = s.execute("volume-history.html", pageData{
				Title: "The volume reconciler's " + v.Title + ", minor by minor", Page: PageVolumeHistory,
				Tag: s.cfg.DefaultTag, Tags: tagsList, DefaultTag: s.cfg.DefaultTag, VolumeHistory: v, Quiz: quiz,
			})
		}
		if err != nil {
			s.log.Error("render volume history", "key", key, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the history", Message: err.Error()})
			return
		}
		writeHTML(w, body)
	})
}

// volumeReadings are the second readings of tags, oldest first, once all
// are loaded (ok); until then the page says how far along they are and
// reloads.
func (s *Site) volumeReadings(w http.ResponseWriter, r *http.Request, key string, tags []string) ([]*volume.Reading, bool) {
	states := make([]*volState, len(tags))
	for i := len(tags) - 1; i >= 0; i-- {
		st := s.volume(tags[i])
		if st == nil {
			if !s.volumeAdmitted(w, r, tags[i]) {
				return nil, false
			}
			st = s.startVolume(tags[i])
		}
		states[i] = st
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.wait)
	defer cancel()
	var rs []*volume.Reading
	for i, st := range states {
		if st == nil {
			break
		}
		select {
		case <-st.done:
		case <-ctx.Done():
		}
		if !isDone(st.done) {
			break
		}
		if st.err != nil {
			s.loadFailed(w, r, tags[i], st.err)
			return nil, false
		}
		rs = append(rs, st.reading)
	}
	if len(rs) < len(tags) {
		w.Header().Set("Retry-After", "2")
		s.statusPage(w, r, http.StatusAccepted, pageData{Refresh: true,
			Heading: fmt.Sprintf("Reading the volume manager at every minor release for the history of %s…", key),
			Message: fmt.Sprintf("%d of %d minor releases (%s to %s) are ready; each first reading of a tag reads its module zip, fetched through the Go module proxy when this server does not have it.", len(rs), len(tags), tags[0], tags[len(tags)-1]),
			Advice:  "This page reloads itself every two seconds until they are."})
		return nil, false
	}
	return rs, true
}

// newVolumeHistoryView lays out h, with the note and the other units as
// of the newest reading.
func newVolumeHistoryView(h *diff.VolumeHistory, last *volume.Reading, quiz bool) (*volumeHistoryView, error) {
	v := &volumeHistoryView{H: h, Title: h.Key}
	if h.Key == diff.VolumeEntry {
		v.Title = "entry"
	}
	if !quiz {
		notes, err := newVolumeNotes(last)
		if err != nil {
			return nil, err
		}
		v.Note = notes.find(h.Key)
	}
	for _, k := range append([]string{diff.VolumeEntry}, partKeys(last)...) {
		if k != h.Key {
			v.Keys = append(v.Keys, k)
		}
	}
	for i, st := range h.Tags {
		hs := volumeHistoryStep{VolumeStep: st}
		if i > 0 {
			hs.Compare = volumeCompareURL(h.Tags[i-1].Tag, st.Tag, h.Key)
		}
		if d := st.Diff; d != nil {
			hs.Status = string(d.Status)
			says := unitSays(d, quiz)
			if d.Status == diff.Changed && slices.Contains(d.Changed, "body") {
				says = append(says, "its body changed")
			}
			hs.Changed = strings.Join(says, "; ")
			var short []string
			for _, c := range d.Changed {
				if quiz && c == "direction" { // the worksheet's to find
					continue
				}
				short = append(short, map[string]string{"file": "moved", "name": "renamed", "guard": map[bool]string{true: "gate", false: "guard"}[h.Key == diff.VolumeEntry], "direction": "direction", "body": "body"}[c])
			}
			hs.Short = strings.Join(short, ", ")
			if len(unitSays(d, quiz)) > 0 || d.Status == diff.Added || d.Status == diff.Removed {
				v.Facts = append(v.Facts, st.Tag+": "+cmp.Or(hs.Changed, string(d.Status))+".")
			}
		} else if i == 0 && st.Unit != nil {
			v.Facts = append(v.Facts, fmt.Sprintf("%s: %s in %s.", st.Tag, st.Unit.Func, st.Unit.File))
		}
		v.Steps = append(v.Steps, hs)
	}
	return v, nil
}

func partKeys(r *volume.Reading) []string {
	var out []string
	for _, p := range r.Parts {
		out = append(out, p.Key)
	}
	return out
}
