package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// A time a reader waits, between what one page does and what another then
// shows, is measured on the pages' own clocks: each notes the moment
// (Date.now(), the machine's clock, the same in every tab) in a window
// property, and the test subtracts. Measured from the test, the wait would
// also count chromedp's round trips (finding and scrolling to a node before
// a click) and the test's polling after the change, which take a good part
// of a second on a loaded machine and are not the reader's wait.

// MarkEvent has the page in ctx note, in window[name], when an event of
// the type last reached the element selector matches (in the capture
// phase, before the page's own handlers).
func MarkEvent(ctx context.Context, name, selector, event string) error {
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const k = `+js(name)+`, el = document.querySelector(`+js(selector)+`);
		delete window[k];
		if (!el) return false;
		el.addEventListener(`+js(event)+`, () => { window[k] = Date.now() }, {capture: true});
		return true })()`))
	if err == nil && !ok {
		err = fmt.Errorf("no element %s to note %s on", selector, event)
	}
	return err
}

// MarkWhen has the page in ctx note, in window[name], when cond (a
// JavaScript expression) first holds, asked on every change of a class,
// every scroll and every 10 ms from now on. A cond that holds already is
// an error: there would be nothing to measure.
func MarkWhen(ctx context.Context, name, cond string) error {
	armed, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const k = `+js(name)+`, stops = window.__syncloopMarks ??= {};
		stops[k]?.(); delete window[k];
		if (`+cond+`) return false;
		const check = () => { if (window[k] === undefined && (`+cond+`)) { window[k] = Date.now(); stop() } };
		const mo = new MutationObserver(check);
		mo.observe(document.documentElement, {subtree: true, attributes: true, attributeFilter: ['class']});
		document.addEventListener('scroll', check, true);
		const iv = setInterval(check, 10);
		const stop = stops[k] = () => { mo.disconnect(); document.removeEventListener('scroll', check, true); clearInterval(iv) };
		return true })()`))
	if err == nil && !armed {
		err = fmt.Errorf("%s: it holds already, before what is to bring it about", cond)
	}
	return err
}

// Marked is the moment the page in ctx noted in window[name], and false
// when it has noted none yet.
func Marked(ctx context.Context, name string) (time.Time, bool, error) {
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window[`+js(name)+`] ?? -1`))
	if err != nil || ms < 0 {
		return time.Time{}, false, err
	}
	return time.UnixMilli(int64(ms)), true, nil
}

// js is s as a JavaScript string literal.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
