// dom.js: the few things every module of the page needs, once: an element
// builder (text only, never HTML), announcements to the toast and to screen
// readers, copying to the clipboard, a source line's element, the
// storage of this site and of this tab, and the wait before reconnecting.

// lineEl is the element of source line n on the page (id "L2760"), or
// null: no line n here, or no n.
export function lineEl(n) {
	return n ? document.getElementById('L' + n) : null;
}

// el builds an element with a class and text; never HTML.
export function el(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls) e.className = cls;
	if (text !== undefined) e.textContent = text;
	return e;
}

// visible shows bidirectional controls (embeddings, overrides, isolates,
// marks) in a name as escapes ("invoice-\u202efdp.exe"), never applied:
// applied, U+202E makes that name read "invoice-exe.pdf". The server
// shows them so in log text; names pass through here too.
const BIDI = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;
export function visible(s) {
	return String(s ?? '').replace(BIDI, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

// announce shows text in the page's toast (#toast, a polite live region),
// which screen readers read out.
export function announce(text, ms = 1800) {
	const t = document.getElementById('toast');
	if (!t) return;
	t.textContent = text;
	t.classList.add('show');
	clearTimeout(announce.timer);
	announce.timer = setTimeout(() => t.classList.remove('show'), ms);
}

// copyText puts text on the clipboard and says so; with no clipboard (an
// insecure origin, a refused permission) it shows the text to copy by hand.
export async function copyText(text, what = text) {
	try {
		await navigator.clipboard.writeText(text);
		announce('Copied ' + what);
		return true;
	} catch {
		announce(text, 6000);
		return false;
	}
}

// Backoff is the wait before a reconnect: doubling from min to max, with
// jitter so that a restarted server is not met by every browser at once.
export class Backoff {
	constructor(min = 500, max = 15000) {
		this.min = min;
		this.max = max;
		this.cur = min;
	}

	// next is the wait before the next attempt, in ms.
	next() {
		const wait = this.cur / 2 + Math.random() * (this.cur / 2);
		this.cur = Math.min(this.cur * 2, this.max);
		return wait;
	}

	reset() {
		this.cur = this.min;
	}
}

// countdown writes say(seconds left) into node every second until ms have
// passed, then calls done. It returns a function that stops it.
export function countdown(node, ms, say, done) {
	const end = Date.now() + ms;
	let timer = 0;
	const tick = () => {
		const left = end - Date.now();
		if (left <= 0) {
			done();
			return;
		}
		node.textContent = say(Math.ceil(left / 1000));
		timer = setTimeout(tick, Math.min(1000, left));
	};
	tick();
	return () => clearTimeout(timer);
}

// linkKey is the key a link brought (?k=KEY), kept in this tab's
// sessionStorage under name, so that a reload still has it once the
// address no longer shows it; '' when neither has one.
export function linkKey(name) {
	const k = new URLSearchParams(location.search).get('k');
	if (k) tabStore(name, k);
	return tabStored(name, k || '');
}

// unlink takes the named parameters (a key, ?ro=1) out of the address,
// when it has any of them, so that the address (and a link copied from
// it) no longer carries them.
export function unlink(...names) {
	const params = new URLSearchParams(location.search);
	if (names.some((n) => params.has(n))) history.replaceState(null, '', location.pathname + location.hash);
}

// tabStored reads this tab's sessionStorage item (it outlives a reload,
// not the tab), or fallback where it has none or storage is refused;
// tabStore writes one ('' removes it), and where refused the value lasts
// only this page.
export function tabStored(name, fallback = '') {
	try {
		return sessionStorage.getItem(name) || fallback;
	} catch {
		return fallback;
	}
}
export function tabStore(name, value) {
	try {
		if (value) sessionStorage.setItem(name, value);
		else sessionStorage.removeItem(name);
	} catch {
		// refused: kept for this page only
	}
}

// stored reads a localStorage item, or fallback where storage is refused
// (private mode, a blocked third-party frame); store writes one, and where
// refused the value lasts only this page.
export function stored(name, fallback) {
	try {
		return localStorage.getItem(name) ?? fallback;
	} catch {
		return fallback;
	}
}
export function store(name, value) {
	try {
		localStorage.setItem(name, value);
	} catch {
		// refused: kept for this page only
	}
}
