package site

// The second reading in rooms and classes: a room that reads it
// (rooms.Room.Reading) shows /k8s/{tag}/volume-manager at /rooms/{id},
// with the room bar, the live pane and the worksheet its readers write
// (annotations/volume.go); the instructor's answer key at
// /k8s/{tag}/volume-manager/answer-key.md, refused in quiz mode.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations"
)

// PageVolumeAnswerKey names the second reading's answer key.
const PageVolumeAnswerKey = "volume-manager/answer-key.md"

// volumeSheet is the second reading's worksheet as the page asks it.
type volumeSheet struct {
	PhaseQuestion string // asked once, of every phase
	Phases        []sheetItem
	Items         []sheetItem // the two sets, the sentence, the controllers
}

type sheetItem struct {
	ID, Label, Question string
}

func newVolumeSheet(r *volume.Reading) volumeSheet {
	s := volumeSheet{PhaseQuestion: annotations.VolumePhaseQuestion}
	for _, p := range r.Parts {
		s.Phases = append(s.Phases, sheetItem{annotations.VolumePhaseID(p.Key), p.Key, annotations.VolumePhaseQuestion})
	}
	s.Items = []sheetItem{
		{annotations.VolumeDesired, "DesiredStateOfWorld", annotations.VolumeSetQuestion},
		{annotations.VolumeActual, "ActualStateOfWorld", annotations.VolumeSetQuestion},
		{annotations.VolumeSentence, "Level-triggered, in one sentence", annotations.VolumeSentenceQuestion},
		{annotations.VolumeControllers, "The same shape in P4's controllers", annotations.VolumeControllersQuestion},
	}
	return s
}

// partsJSON is the live pane's data-cases on the second reading's page:
// each phase's key and colour slot.
func partsJSON(r *volume.Reading) string {
	type jsonPart struct {
		Key string `json:"key"`
		Hue string `json:"hue"`
	}
	ps := []jsonPart{}
	for i, p := range r.Parts {
		ps = append(ps, jsonPart{p.Key, strconv.Itoa(i % 8)})
	}
	b, _ := json.Marshal(ps) // plain strings: cannot fail
	return string(b)
}

// LoadVolumeReading is tag's second reading once loaded; nil before, when
// it starts loading it if the tag is one this server reads (a room's: its
// worksheet is checked against it). VolumeReading never starts a load.
func (s *Site) LoadVolumeReading(tag string) *volume.Reading {
	st := s.volume(tag)
	if st == nil {
		if extractor.CheckTag(tag) != nil || !s.known(tag) {
			return nil
		}
		if st = s.startVolume(tag); st == nil {
			return nil
		}
	}
	if !isDone(st.done) || st.err != nil {
		return nil
	}
	return st.reading
}

// roomVolume renders the second reading's page at tag for room: the
// derived answers left out when the room hides the site's notes or r is
// in quiz mode.
func (s *Site) roomVolume(w http.ResponseWriter, r *http.Request, tag string, room Room) bool {
	st, ok := s.volumeReady(w, r, tag, "")
	if !ok {
		return false
	}
	quiz := s.quiz(r)
	room.HideNotes = room.HideNotes || quiz
	v, err := newVolumeView(st.reading, room.HideNotes)
	if err == nil {
		var body []byte
		tags, _ := s.readableTags()
		body, err = s.execute("volume-manager.html", pageData{
			Title: "Pair session · the volume manager's reconciler at " + tag, Page: PageVolume, Tag: tag,
			Tags: tags, DefaultTag: s.cfg.DefaultTag, Volume: v, Room: &room, Quiz: quiz,
		})
		if err == nil {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Write(body)
			return true
		}
	}
	s.log.Error("render room", "page", PageVolume, "err", err)
	s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the room", Message: err.Error()})
	return false
}

// VolumeAnswerKey serves /k8s/{tag}/volume-manager/answer-key.md: 403 in
// quiz mode, as the first reading's answer key.
func (s *Site) VolumeAnswerKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := chi.URLParam(r, "tag")
		if s.quiz(r) {
			s.statusPage(w, r, http.StatusForbidden, pageData{Tag: tag,
				Heading: "This course hides the answer key",
				Message: "This server answers you in quiz mode: the site's answers to the volume manager's worksheet (each phase's direction, who writes each set) are not served, so that the worksheet is yours to write.",
				Advice:  "Write your answers in the room's worksheet, at the foot of its page, and hand that in; your instructor has the answers.",
			})
			return
		}
		st, ok := s.volumeReady(w, r, tag, "")
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(volumeAnswerKey(st.reading))
	})
}

// volumeAnswerKey is the site's own answers to the second reading's
// worksheet at the tag, from the derived model: each phase's direction
// and what it starts, each set's writers, the sentence, the controllers.
func volumeAnswerKey(r *volume.Reading) []byte {
	var b bytes.Buffer
	e := r.Entry
	fmt.Fprintf(&b, "# syncloop answer key: the volume manager's reconciler, (*reconciler).%s at k8s.io/kubernetes %s\n\n", e.Func, r.Tag)
	fmt.Fprintf(&b, "Source: [%s:%d-%d](%s)\n\n", e.File, e.Line, e.End, e.Upstream)
	fmt.Fprintf(&b, "The site's own answers, derived from the source at %s: for an instructor, or to check a worksheet after handing it in. Not a hand-in: a room's worksheet is what its readers wrote.\n\n", r.Tag)
	if e.Gate != "" {
		fmt.Fprintf(&b, "`Run` chooses `%s` by the feature gate `%s` (%s, default %s); `%s` runs otherwise.\n\n", e.Func, e.Gate, e.PreRelease, onOff(e.Default), e.Other)
	}
	fmt.Fprintf(&b, "## The %d phases of a reconcile pass\n\n", len(r.Parts))
	for _, p := range r.Parts {
		fmt.Fprintf(&b, "- **%s** ([%s:%d](%s)): %s", p.Key, p.File, p.Line, p.Upstream, directionSentence(p))
		if p.ReadyToUnmount {
			b.WriteString(" It runs only once `readyToUnmount()` holds.")
		}
		for _, st := range p.Starts {
			fmt.Fprintf(&b, "\n  - starts `operationExecutor.%s` (in %s) → %s", st.Call, st.In, codeList(st.Generators))
			if st.RunBy != "" {
				fmt.Fprintf(&b, ", run by `%s` on a goroutine of its own", st.RunBy)
			}
			if len(st.Writes) > 0 {
				fmt.Fprintf(&b, "; writes %s", codeList(st.Writes))
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n## The two sets and who writes them\n\n")
	for _, set := range r.Sets {
		fmt.Fprintf(&b, "### %s ([%s:%d](%s))\n\n%d functions call its %d mutating methods:\n\n", set.Name, set.File, set.Line, set.Upstream, len(set.Writers), len(set.Mutating))
		for _, w := range set.Writers {
			var calls []string
			for _, c := range w.Calls {
				calls = append(calls, c.Method)
			}
			fmt.Fprintf(&b, "- `%s` (%s:%d): %s\n", w.Func, w.File, w.Line, strings.Join(calls, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "## Level-triggered, in one sentence\n\n")
	fmt.Fprintf(&b, "> Every %s the reconciler reads both sets as they are now and closes the gap (removes what the actual state has and the desired state lacks, adds what the desired state wants and the actual state lacks), so a missed, late or repeated event costs at most one pass: it never replays events.\n\n", e.Interval)
	fmt.Fprintf(&b, "## The same shape in P4's controllers\n\n")
	b.WriteString("kube-controller-manager's controllers reconcile a desired state (the object's spec) with the actual state (what exists) the same way: the ReplicaSet controller (its pods against `spec.replicas`), the Deployment, StatefulSet, DaemonSet and Job controllers; and the attach/detach controller (`pkg/controller/volume/attachdetach`), whose own DesiredStateOfWorld and ActualStateOfWorld are this reconciler's across the node boundary.\n")
	return b.Bytes()
}

func onOff(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "on"
	}
	return "off"
}

func codeList(xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return strings.Join(out, ", ")
}
