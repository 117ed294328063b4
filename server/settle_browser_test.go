package server

import (
	"context"
	"testing"
)

// settled is a script that resolves, true, once the page has come to rest:
// its finite animations and transitions finished, and then nothing scrolled
// (the window, the live pane's list) for three frames running; ten seconds
// at most. It is what a check of where something is on the page after a
// click, a key or a resize, or a screenshot, waits for, instead of a time
// that is long enough on a quiet machine. A frame is a requestAnimationFrame,
// or 50 ms in a tab that draws none.
const settled = `(async () => {
	await Promise.all(document.getAnimations()
		.filter((a) => a.effect && a.effect.getComputedTiming().endTime !== Infinity)
		.map((a) => a.finished.catch(() => {})));
	const frame = () => new Promise((r) => { requestAnimationFrame(() => r()); setTimeout(r, 50); });
	const where = () => [scrollX, scrollY, ...[...document.querySelectorAll('.live-lines')].map((e) => e.scrollTop)].join();
	let last = where(), still = 0;
	for (const end = Date.now() + 10000; still < 3 && Date.now() < end; ) {
		await frame();
		const now = where();
		still = now === last ? still + 1 : 0;
		last = now;
	}
	return true;
})()`

// settle waits until the page in ctx has come to rest (see settled).
func settle(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, settled)
}
