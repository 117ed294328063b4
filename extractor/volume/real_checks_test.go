package volume

// Checks of the derivation at the golden tags against what the source
// says read another way: the entry the issue describes per tag, every
// textual call of a mutating method, and the literals the lab's journal
// shows.

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestEntryByTag: what runs at each tag, as read at the tag (see the
// how-found notes): the function, its file, and the gate with its default.
func TestEntryByTag(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		tag, fn, file, gate string
		def                 *bool
		ready               bool // the remove phases wait for readyToUnmount
	}{
		{"v1.20.0", "reconcile", "reconciler.go", "", nil, false},
		{"v1.24.0", "reconcile", "reconciler.go", "", nil, false},
		{"v1.26.0", "reconcile", "reconciler.go", "SELinuxMountReadWriteOncePod", &off, false},
		{"v1.27.0", "reconcileNew", "reconciler_new.go", "NewVolumeManagerReconstruction", &on, true},
		{"v1.30.0", "reconcileNew", "reconciler.go", "", nil, true},
		{"v1.31.0", "reconcile", "reconciler.go", "", nil, true},
		{"v1.37.2", "reconcile", "reconciler.go", "", nil, true},
		{"v1.38.0-beta.0", "reconcile", "reconciler.go", "", nil, true},
	} {
		t.Run(c.tag, func(t *testing.T) {
			r := deriveAt(t, c.tag)
			e := r.Entry
			if e.Func != c.fn || e.File != reconcilerDir+"/"+c.file || e.Gate != c.gate || fmt.Sprint(deref(e.Default)) != fmt.Sprint(deref(c.def)) {
				t.Errorf("entry %s %s gate %q default %v, want %s %s gate %q default %v", e.Func, e.File, e.Gate, deref(e.Default), c.fn, c.file, c.gate, deref(c.def))
			}
			for _, p := range r.Parts {
				if p.Direction == RemoveExtra && p.ReadyToUnmount != c.ready {
					t.Errorf("%s: remove-extra phase %s guarded by readyToUnmount: %v, want %v", c.tag, p.Key, p.ReadyToUnmount, c.ready)
				}
			}
		})
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

var skipComment = regexp.MustCompile(`^\s*//`)

// TestWritersCoverCallSites: every textual call .M( of a derived mutating
// method in pkg/kubelet and pkg/volume/util (non-test, outside the cache
// package) is a derived writer. (The rest of pkg/volume, the plugins, is
// not read here: the only such calls there, at the golden tags, are
// provisioners' own DeleteVolume, not the sets'.) At every tag the actual
// state is written through an interface it embeds.
func TestWritersCoverCallSites(t *testing.T) {
	for _, tag := range goldenTags {
		t.Run(tag, func(t *testing.T) {
			r := deriveAt(t, tag)
			derived := map[string]bool{}
			var names []string
			embedded := 0
			for _, s := range r.Sets {
				names = append(names, s.Mutating...)
				for _, w := range s.Writers {
					for _, c := range w.Calls {
						derived[fmt.Sprintf("%s:%d", w.File, c.Line)] = true
						if strings.HasPrefix(c.Through, "operationexecutor.") {
							embedded++
						}
					}
				}
			}
			if embedded == 0 {
				t.Errorf("no write through operationexecutor's interfaces at %s", tag)
			}
			re := regexp.MustCompile(`\.(` + strings.Join(names, "|") + `)\(`)
			hits := textualCalls(t, extractortest.FS(t, tag), re)
			for _, hit := range hits {
				if !derived[hit] {
					t.Errorf("%s calls a mutating method but is no derived writer", hit)
				}
			}
			if len(hits) < 20 {
				t.Errorf("only %d textual calls of mutating methods at %s: the check reads too little", len(hits), tag)
			}
		})
	}
}

// textualCalls are the file:line of every line matching re in the non-test
// Go files of pkg/kubelet and pkg/volume/util outside the cache package.
func textualCalls(t *testing.T, fsys fs.FS, re *regexp.Regexp) []string {
	var out []string
	for _, root := range []string{"pkg/kubelet", "pkg/volume/util"} {
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.HasPrefix(p, cacheDir+"/") {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(data), "\n") {
				if re.MatchString(line) && !skipComment.MatchString(line) {
					out = append(out, fmt.Sprintf("%s:%d", p, i+1))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestLogLiteralsAcrossTags: the literals the lab's emptyDir pod logs (the
// issue's list) are log sites from v1.24 on, the completion at a verbosity
// held in a variable.
func TestLogLiteralsAcrossTags(t *testing.T) {
	want := []string{
		"Added volume to desired state", "Removing volume from desired state",
		"operationExecutor.VerifyControllerAttachedVolume started", "Starting operationExecutor.MountVolume",
		"operationExecutor.MountVolume started", "MountVolume.SetUp succeeded",
		"operationExecutor.UnmountVolume started", "Volume detached", "All volumes are attached and mounted for pod",
	}
	for _, tag := range goldenTags[1:] {
		t.Run(tag, func(t *testing.T) {
			r := deriveAt(t, tag)
			for _, lit := range want {
				var found *LogSite
				for i := range r.LogSites {
					if r.LogSites[i].Literal == lit {
						found = &r.LogSites[i]
						break
					}
				}
				switch {
				case found == nil:
					t.Errorf("no log site with the literal %q", lit)
				case lit == "MountVolume.SetUp succeeded" && (found.VerbosityVar == "" || len(found.VerbosityValues) == 0):
					t.Errorf("%q at %s:%d: verbosity %+v, want one held in a variable", lit, found.File, found.Line, found)
				}
			}
		})
	}
}
