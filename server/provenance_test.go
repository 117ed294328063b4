package server

import (
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestFooterSaysHowVerified: a tag's pages say where its source came from
// and exactly how it was checked, as the Reading records it; a page with no
// Reading claims nothing about verification.
func TestFooterSaysHowVerified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		source, verified string
		want             string
	}{
		{"proxy", extractor.VerifiedPinnedSumDB, "syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, verified against the hash pinned in syncloop and the Go checksum database."},
		{"proxy", extractor.VerifiedSumDB, "syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, verified against the Go checksum database."},
		{"proxy", extractor.VerifiedPinned, "syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, verified against the hash pinned in syncloop, with no checksum database lookup."},
		{"proxy", extractor.VerifiedNone, "syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, not verified: GOSUMDB=off, GONOSUMDB or GOPRIVATE turned the checksum database off."},
		{"modcache", extractor.VerifiedZiphash, "syncloop read k8s.io/kubernetes@v1.37.2 from the local Go module cache, verified against the .ziphash the go command wrote when it checked the zip."},
		{"modcache", extractor.VerifiedSumDB, "syncloop read k8s.io/kubernetes@v1.37.2 from the local Go module cache, verified against the Go checksum database."},
		{"modcache", extractor.VerifiedPinned, "syncloop read k8s.io/kubernetes@v1.37.2 from the local Go module cache, verified against the hash pinned in syncloop, with no checksum database lookup."},
		{"modcache", extractor.VerifiedNone, "syncloop read k8s.io/kubernetes@v1.37.2 from the local Go module cache, not verified: GOSUMDB=off, GONOSUMDB or GOPRIVATE turned the checksum database off."},
		{"dir", extractor.VerifiedNone, "syncloop read k8s.io/kubernetes@v1.37.2 from a local checkout (--source-dir), which has no checksum: not verified."},
		{"proxy", "", "syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, with no record of how it was verified."},
	} {
		t.Run(tc.source+" "+tc.verified, func(t *testing.T) {
			t.Parallel()
			r := fixture.Reading(t)
			r.Source, r.Verified = tc.source, tc.verified
			s := newTestServer(t, &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: r}})
			for _, path := range []string{"/k8s/" + fixture.Tag + "/", "/k8s/" + fixture.Tag + "/pod-workers"} {
				body := get(t, s, path).Body.String()
				_, foot, ok := strings.Cut(body, `<footer class="site">`)
				if !ok {
					t.Fatalf("%s: no footer", path)
				}
				if !strings.Contains(foot, `<p class="provenance">`+tc.want+`</p>`) {
					t.Errorf("%s: footer\n%s\nwant %q", path, foot[:min(len(foot), 600)], tc.want)
				}
				if strings.Contains(foot, "verified against the checksum database") {
					t.Errorf("%s: footer makes the old blanket claim", path) // whatever the Reading says
				}
			}
		})
	}
	// A compare says it of both tags.
	old := olderFixture(t, "v1.36.0")
	old.Source, old.Verified = "modcache", extractor.VerifiedZiphash
	cur := fixture.Reading(t)
	cur.Source, cur.Verified = "proxy", extractor.VerifiedPinnedSumDB
	s := newTestServer(t, &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: cur, "v1.36.0": old}})
	get(t, s, "/k8s/v1.36.0/")
	waitLoaded(t, s, "v1.36.0")
	body := get(t, s, "/k8s/compare/v1.36.0..."+fixture.Tag).Body.String()
	_, foot, _ := strings.Cut(body, `<footer class="site">`)
	want := `<p class="provenance">syncloop read k8s.io/kubernetes@v1.36.0 from the local Go module cache, verified against the .ziphash the go command wrote when it checked the zip. ` +
		`syncloop read k8s.io/kubernetes@v1.37.2 from the Go module proxy, verified against the hash pinned in syncloop and the Go checksum database.</p>`
	if !strings.Contains(foot, want) {
		t.Errorf("compare footer\n%s\nwant %s", foot, want)
	}

	// A status page (no Reading) says where sources come from, and no more.
	s = newTestServer(t, &fixture.Loader{})
	body = get(t, s, "/k8s/not-a-tag/").Body.String()
	_, foot, _ = strings.Cut(body, `<footer class="site">`)
	if want := "each tag's pages say how its source was verified"; !strings.Contains(foot, want) || strings.Contains(foot, "verified against") {
		t.Errorf("status page footer\n%s\nwant %q and no claim of verification", foot, want)
	}
}
