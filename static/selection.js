// selection.js: the page's one selection, which the source (reader.js), the
// notes, the live pane (live.js) and a room (room.js) all read and write:
//
//	{key, lo, hi, seq}: a case (key), source lines lo..hi, a log line (seq)
//
// Any part may be empty ('' or 0). Lines imply their case: selecting line
// 2760 selects the case it is in, so the pane and the source agree. The
// address reflects it (#case-pleg, #L2760, #L2760-L2772; a bare address is
// no selection), so a link, Back and a reload all come back to it.
//
// Subscribers get (selection, how): how.from says who selected ('source',
// 'pane', 'keys', 'url', 'room'), how.scroll whether to bring it into view.
// This is the only way a selection is told: a room (room.js) hears the
// reader's own moves here, and applies the driver's with from 'room'.

import { lineEl } from './dom.js';

const subs = [];
let cur = { key: '', lo: 0, hi: 0, seq: 0 };

// current is the selection now (a copy).
export function current() {
	return { ...cur };
}

// onSelect calls fn(selection, how) on every change.
export function onSelect(fn) {
	subs.push(fn);
}

// caseOfLine is the key of the case whose block holds source line n, or ''.
export function caseOfLine(n) {
	return lineEl(n)?.closest('section.case[data-case]')?.dataset.case || '';
}

// hashOf is the address fragment of a selection ('' for none).
export function hashOf(s) {
	if (s.lo) return s.hi > s.lo ? `#L${s.lo}-L${s.hi}` : `#L${s.lo}`;
	if (s.key) return '#case-' + s.key;
	return '';
}

// parseHash reads a fragment; null when it names no selection but
// something else on the page (#two-sets), which leaves the selection be.
export function parseHash(hash) {
	const h = decodeURIComponent(String(hash || '').replace(/^#/, ''));
	if (!h) return { key: '', lo: 0, hi: 0, seq: 0 };
	let m;
	if ((m = /^L(\d+)(?:-L?(\d+))?$/.exec(h))) {
		const a = Number(m[1]);
		const b = m[2] ? Number(m[2]) : a;
		return { key: '', lo: Math.min(a, b), hi: Math.max(a, b), seq: 0 };
	}
	if ((m = /^case-(.+)$/.exec(h))) return { key: m[1], lo: 0, hi: 0, seq: 0 };
	return null;
}

// select makes s the selection. how.url is 'push' (a new history entry),
// 'replace' (the default) or 'none' (the address already says it).
export function select(s, how = {}) {
	const next = { key: s.key || '', lo: s.lo || 0, hi: s.hi || s.lo || 0, seq: s.seq || 0 };
	if (next.hi < next.lo) [next.lo, next.hi] = [next.hi, next.lo];
	if (next.lo && !next.key) next.key = caseOfLine(next.lo);
	cur = next;
	const url = how.url || 'replace';
	if (url !== 'none') {
		const target = location.pathname + location.search + hashOf(next);
		if (target !== location.pathname + location.search + location.hash) {
			if (url === 'push') history.pushState(null, '', target);
			else history.replaceState(null, '', target);
		}
	}
	const h = { from: how.from || '', scroll: !!how.scroll };
	for (const fn of subs) fn(current(), h);
}
