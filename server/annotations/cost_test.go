package annotations

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// TestCostlyNotesShownAsText: notes of the shapes that make goldmark
// superlinear are shown as their text, escaped, in a bounded time;
// ordinary notes, links, lists and quotes and all, are still Markdown.
func TestCostlyNotesShownAsText(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("[a](", MaxNoteBytes/4),
		strings.Repeat("![a](", MaxNoteBytes/5),
		strings.Repeat("> ", MaxNoteBytes/2),
		strings.Repeat("- > - > - > - > - > a\n", MaxNoteBytes/22),
		strings.Repeat("<a ", MaxNoteBytes/3),
		strings.Repeat("*a", MaxNoteBytes/2),
	} {
		start := time.Now()
		got := Render(text)
		if !strings.HasPrefix(got, `<pre class="note-plain">`) || strings.Contains(got, "<a") || strings.Contains(got, "<blockquote") {
			t.Errorf("%.20q…: %.80q, want the text in <pre>, escaped", text, got)
		}
		if took := time.Since(start); took > 50*time.Millisecond {
			t.Errorf("%.20q…: %v to show", text, took)
		}
	}
	ordinary := strings.Repeat("- **configCh** is written by `(*PodConfig).Updates`, see [the loop](https://example.com/)\n", 40) + "\n> quoted\n> - a list in it\n"
	if got := Render(ordinary); strings.Contains(got, "note-plain") || !strings.Contains(got, `<a href="https://example.com/">the loop</a>`) || !strings.Contains(got, "<blockquote>") {
		t.Errorf("an ordinary note: %.300s", got)
	}
}

// TestRenderGateTakesTurns: the slots go to the clients waiting in turn,
// one each: a client whose render ends, with another of its own waiting,
// goes after the clients already waiting. A client's third request at
// once is refused without waiting.
func TestRenderGateTakesTurns(t *testing.T) {
	g := newRenderGate(1)
	ctx := context.Background()
	if ok, _ := g.enter(ctx, "a", time.Second); !ok {
		t.Fatal("a free slot not taken")
	}
	got := make(chan string, 3)
	wait := func(client string) {
		if ok, _ := g.enter(ctx, client, 10*time.Second); ok {
			got <- client
		}
	}
	go wait("a")
	testwait.For(t, 5*time.Second, "a's second request waiting", func() bool { return g.waitingFor("a") })
	go wait("b")
	testwait.For(t, 5*time.Second, "b's request waiting", func() bool { return g.waitingFor("b") })
	if ok, waited := g.enter(ctx, "a", time.Second); ok || waited {
		t.Errorf("a's third request at once: ok %v waited %v, want refused at once", ok, waited)
	}
	g.leave("a")
	if c := <-got; c != "b" {
		t.Fatalf("the turn after a's render went to %s: want b, waiting before a's second", c)
	}
	g.leave("b")
	if c := <-got; c != "a" {
		t.Fatalf("then %s, want a", c)
	}
	g.leave("a")
	if ok, waited := g.enter(ctx, "c", time.Second); !ok || waited {
		t.Errorf("a free slot again: ok %v waited %v", ok, waited)
	}
}

// waitingFor reports whether client has a request waiting.
func (g *renderGate) waitingFor(client string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting[client]) > 0
}
