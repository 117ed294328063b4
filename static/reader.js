// reader.js: the reading page's behaviour. Links to a line (#L2760), a range
// (#L2760-L2772, made by shift-clicking a second line number) or a case
// (#case-pleg) scroll to and highlight it; j/k move between cases, y copies
// the current case's link, ? shows the keys.
//
// What is selected lives in selection.js, shared with the live pane and a
// room: this module draws it on the source and writes it when the reader
// clicks or steps with the keys.

import { announce, copyText, lineEl } from './dom.js';
import { current, onSelect, parseHash, select } from './selection.js';

const cases = [...document.querySelectorAll('section.case[data-case]')];
let anchorLine = 0; // the line a shift-click extends from

function caseIndex(key) {
	return cases.findIndex((c) => c.dataset.case === key);
}

function currentIndex() {
	return caseIndex(current().key);
}

// reveal opens the <details> an element is folded in, so it can be seen.
function reveal(el) {
	for (let d = el.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
}

// viewBand is the part of the window a reader sees the reading in: below
// a room's sticky bar, above the live pane's drawer (narrow windows).
function viewBand() {
	let top = 0;
	let bottom = window.innerHeight;
	const bar = document.querySelector('.room-bar');
	if (bar && getComputedStyle(bar).position === 'sticky') top = Math.max(0, bar.getBoundingClientRect().bottom);
	const live = document.getElementById('live');
	if (live && getComputedStyle(live).position === 'fixed' && live.offsetHeight) {
		bottom = Math.min(bottom, live.getBoundingClientRect().top);
	}
	if (bottom - top < 80) bottom = window.innerHeight; // no room left: the whole window
	return { top, bottom };
}

// scrollTo jumps (no smooth scrolling: a long animated scroll is slow to
// read from, and the browser's own jump to the #fragment must not race it).
// A line comes to the middle of what the reader sees, with its context
// around it; a case to the top, its heading clear of the edge.
function scrollTo(el, where = 'start') {
	reveal(el);
	// First the browser's own move, which also scrolls a code block that
	// scrolls in itself (one column: the sticky code); then the window's,
	// measured against what covers it.
	el.scrollIntoView({ block: where === 'center' ? 'center' : 'start', behavior: 'instant' });
	const b = viewBand();
	const r = el.getBoundingClientRect();
	const dy = where === 'center' ? (r.top + r.bottom) / 2 - (b.top + b.bottom) / 2 : r.top - (b.top + 8);
	if (Math.abs(dy) >= 1) window.scrollBy({ top: dy, behavior: 'instant' });
}

// draw shows a selection on the source: the case's block, the lines.
onSelect((s, how) => {
	for (const e of document.querySelectorAll('.line.hl')) e.classList.remove('hl');
	for (const e of document.querySelectorAll('section.case.selected')) e.classList.remove('selected');
	const i = caseIndex(s.key);
	if (i >= 0) cases[i].classList.add('selected');
	for (let n = s.lo; n && n <= s.hi; n++) {
		const e = lineEl(n);
		if (e) {
			e.classList.add('hl');
			reveal(e);
		}
	}
	if (s.lo) anchorLine = s.lo;
	const first = s.lo ? lineEl(s.lo) : null;
	const inHelper = first && i >= 0 && first.closest('section.case') !== cases[i] ? first.closest('details.helper') : null;
	onToCase(inHelper, s.key);
	if (inHelper && how.from === 'pane') {
		// The line was logged from a helper the case calls (handleProbeSync
		// serves three cases).
		announce(`${s.key}: logged at line ${s.lo}, in a helper the case calls`);
	}
	if (!how.scroll) return;
	if (first) scrollTo(first, 'center');
	else if (i >= 0) scrollTo(cases[i]);
});

// onToCase offers, in a helper a selected line of a case is in (a log line
// clicked in the pane: handleProbeSync logs for three cases), the way on to
// that case; none when the selection is not in a helper.
function onToCase(helper, key) {
	for (const p of document.querySelectorAll('[data-helper-case]')) if (p.closest('details.helper') !== helper || p.dataset.helperCase !== key) p.remove();
	if (!helper || helper.querySelector(`[data-helper-case="${CSS.escape(key)}"]`)) return;
	const p = document.createElement('p');
	p.className = 'helper-case';
	p.dataset.helperCase = key;
	const a = document.createElement('a');
	a.href = '#case-' + key;
	a.textContent = `On to the ${key} case ↑`;
	p.append(`The selected line is in a helper the ${key} case calls. `, a);
	const code = helper.querySelector(':scope > pre, :scope > .chroma, :scope > div');
	if (code) code.before(p);
	else helper.append(p);
}

// followHash selects what location.hash names (Back and Forward too).
function followHash() {
	const s = parseHash(location.hash);
	if (s) select(s, { from: 'url', url: 'none', scroll: true });
}

function caseURL(key) {
	return new URL('#case-' + key, location.href).href;
}

async function copyLink(key, link) {
	const url = caseURL(key);
	if (link) link.dataset.copied = url;
	if (await copyText(url)) {
		link?.classList.add('copied');
		setTimeout(() => link?.classList.remove('copied'), 1500);
	}
}

// The case whose block is at or just above the top of the window: where j
// and k count from when nothing is selected.
function caseInView() {
	let i = -1;
	for (const [n, c] of cases.entries()) {
		if (c.getBoundingClientRect().top <= 80) i = n;
	}
	return i;
}

document.addEventListener('click', (ev) => {
	const t = ev.target;
	if (!(t instanceof Element)) return;
	const ln = t.closest('a.ln');
	if (ln) {
		// The line is in view already: mark it and change the address
		// without scrolling (which following the link would do).
		ev.preventDefault();
		const n = Number(ln.textContent);
		if (ev.shiftKey && anchorLine && anchorLine !== n) {
			select({ lo: anchorLine, hi: n }, { from: 'source', url: 'replace' });
			return;
		}
		anchorLine = n;
		select({ lo: n }, { from: 'source', url: 'push' });
		return;
	}
	const chip = t.closest('[data-case-select]');
	if (chip) {
		select({ key: chip.dataset.caseSelect }, { from: 'source', url: 'push' });
		return;
	}
	const copy = t.closest('[data-copy-link]');
	if (copy) {
		ev.preventDefault();
		const c = copy.closest('section.case');
		if (c) copyLink(c.dataset.case, copy);
		return;
	}
	if (t.closest('[data-show-keys]')) toggleKeys();
});

function toggleKeys() {
	const d = document.getElementById('keys');
	if (!d) return;
	if (d.open) d.close();
	else d.showModal();
}

document.addEventListener('keydown', (ev) => {
	if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
	const t = ev.target;
	if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
	if (t instanceof Element && t.closest('#live .live-lines')) return; // the pane's own keys
	switch (ev.key) {
		case 'j':
		case 'k': {
			if (!cases.length) return;
			const cur = currentIndex();
			const from = cur >= 0 ? cur : caseInView();
			let i = ev.key === 'j' ? from + 1 : from - 1;
			if (from < 0) i = 0;
			i = Math.max(0, Math.min(cases.length - 1, i));
			// A history entry per move, as a click makes: Back goes to the
			// case before, not off the site.
			select({ key: cases[i].dataset.case }, { from: 'keys', scroll: true, url: 'push' });
			break;
		}
		case 'y': {
			const cur = currentIndex();
			const i = cur >= 0 ? cur : caseInView();
			if (i >= 0) copyLink(cases[i].dataset.case, cases[i].querySelector('[data-copy-link]'));
			break;
		}
		case '?':
			toggleKeys();
			break;
		default:
			return;
	}
	ev.preventDefault();
});

// A case's code sticks beside its note while the note is read, when the
// code fits the window (a taller block would hide its own end).
function fitCode() {
	for (const c of cases) {
		const pre = c.querySelector('pre.code');
		if (pre) pre.classList.toggle('stick', pre.offsetHeight < window.innerHeight - 40);
	}
}
fitCode();
window.addEventListener('resize', fitCode);
// The code's height changes after load too (the live pane takes its column,
// fonts arrive, the room bar wraps): measure again whenever it does.
const sized = new ResizeObserver(() => fitCode());
for (const pre of document.querySelectorAll('section.case pre.code')) sized.observe(pre);

// Paper shows what is folded: the doc comment and the helpers open for
// printing, and fold back after.
let printed = [];
window.addEventListener('beforeprint', () => {
	printed = [...document.querySelectorAll('main.reading details:not([open])')].filter((d) => !d.closest('ul.sightings'));
	for (const d of printed) d.open = true;
});
window.addEventListener('afterprint', () => {
	for (const d of printed) d.open = false;
	printed = [];
});

window.addEventListener('hashchange', followHash);
window.addEventListener('popstate', followHash);
// Module scripts run after parsing, in order: live.js has subscribed by now,
// so it hears about a case opened by link.
followHash();
