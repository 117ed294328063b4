// Package browsertest starts the headless Chromium that syncloop's browser
// tests drive, the same way in every package: Debian's chromium, a fresh
// profile, and the flags that keep it off the network it cannot reach.
//
// A test binary starts one Chromium, the first time a test asks for it, and
// gives each test a tab of its own in a browser context of its own (its own
// cookies, storage, permissions and downloads, as in a fresh profile):
// starting Chromium costs seconds on a loaded machine, a tab milliseconds.
// Tests that call t.Parallel have their tabs open side by side. A package
// whose tests use it calls Close from its TestMain.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Path finds Chromium, or skips the test when there is none; under CI=true
// a missing browser fails the test instead.
func Path(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); CI=true requires the browser tests")
	}
	t.Skip("browser test skipped: chromium is not installed (apt-get install -y chromium)")
	return ""
}

// shared is the test binary's Chromium. A browser that died (a crash, a
// test that closed it) is replaced by the next New.
var shared struct {
	mu     sync.Mutex
	path   string
	dir    string          // its profile
	ctx    context.Context // its first tab's context, parent of every test's
	cancel func()
}

// New opens a tab for the test in the binary's headless Chromium at path
// (1440×900, started on first use) and returns its context, which ends after
// timeout or with the test; the tab and its browser context close then.
func New(t testing.TB, path string, timeout time.Duration) context.Context {
	t.Helper()
	bctx, err := browser(path)
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelC := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	ctx, cancelT := context.WithTimeout(ctx, timeout)
	// The tab closes as the test ends, before its Cleanup functions run: one
	// of them is often the httptest server's Close, which waits for the
	// page's open requests (a browser of the test's own used to die with
	// the test's timeout, which ended them).
	stop := context.AfterFunc(t.Context(), func() { cancelT(); cancelC() })
	t.Cleanup(func() { stop(); cancelT(); cancelC() })
	// The first Run creates the tab, so ContextID answers from here on.
	// Every tab behaves as the focused one (focus and blur events, :focus,
	// the clipboard), as when it ran alone: tests' tabs run side by side.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatalf("focus emulation: %v", err)
	}
	return ctx
}

// browser returns the context of the running shared browser, starting it
// when there is none or the last one has gone.
func browser(path string) (context.Context, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.ctx != nil && shared.ctx.Err() == nil && shared.path == path {
		return shared.ctx, nil
	}
	closeLocked()
	dir, err := os.MkdirTemp("", "syncloop-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1440, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	shared.path, shared.dir, shared.ctx = path, dir, ctx
	shared.cancel = func() { cancelC(); cancelA() }
	if err := chromedp.Do(ctx); err != nil {
		closeLocked()
		return nil, err
	}
	return ctx, nil
}

// ContextID is the id of the browser context of the test's tab in ctx (from
// New), for the browser-wide commands that take one: permissions, downloads.
func ContextID(ctx context.Context) cdp.BrowserContextID {
	return chromedp.FromContext(ctx).BrowserContextID
}

// Close stops the binary's Chromium, if one started, and removes its
// profile. Call it from TestMain after m.Run.
func Close() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	closeLocked()
}

func closeLocked() {
	if shared.cancel != nil {
		shared.cancel() // waits for the browser to exit
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	shared.ctx, shared.cancel, shared.dir = nil, nil, ""
}
