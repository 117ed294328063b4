// reader.js: the reading page's behaviour. Links to a line (#L2760), a range
// (#L2760-L2772, made by shift-clicking a second line number) or a case
// (#case-pleg) scroll to and highlight it; j/k move between cases, y copies
// the current case's link, ? shows the keys.
//
// With the live pane (live.js) it speaks through two events on document:
// it dispatches "syncloop:case" {key} when the reader selects a case, and it
// listens for "syncloop:goto" {key, line} to show a case or one line.
// In a room (room.js) it listens for "syncloop:show" {key, lo, hi}: select
// what the driver selected (lines lo..hi, else case key, else nothing),
// without scrolling; room.js scrolls to the driver's lines itself.

const cases = [...document.querySelectorAll('section.case[data-case]')];
const toast = document.getElementById('toast');
let current = -1; // index in cases of the selected case
let anchorLine = 0; // the line a shift-click extends from

function lineEl(n) {
	return document.getElementById('L' + n);
}

function clearHighlight() {
	for (const el of document.querySelectorAll('.line.hl')) el.classList.remove('hl');
	for (const el of document.querySelectorAll('section.case.selected')) el.classList.remove('selected');
}

// reveal opens the <details> an element is folded in, so it can be seen.
function reveal(el) {
	for (let d = el.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
}

// scrollTo jumps (no smooth scrolling: a long animated scroll is slow to
// read from, and the browser's own jump to the #fragment must not race it).
function scrollTo(el) {
	reveal(el);
	el.scrollIntoView({ block: 'start', behavior: 'instant' });
}

function announce(text) {
	if (!toast) return;
	toast.textContent = text;
	toast.classList.add('show');
	clearTimeout(announce.timer);
	announce.timer = setTimeout(() => toast.classList.remove('show'), 1600);
}

// selectCase highlights case i; tell says whether the live pane is told.
function selectCase(i, { scroll = true, tell = true } = {}) {
	if (i < 0 || i >= cases.length) return;
	clearHighlight();
	current = i;
	const el = cases[i];
	el.classList.add('selected');
	if (scroll) scrollTo(el);
	if (tell) {
		document.dispatchEvent(new CustomEvent('syncloop:case', { detail: { key: el.dataset.case } }));
	}
}

function caseIndex(key) {
	return cases.findIndex((c) => c.dataset.case === key);
}

// selectLines highlights lines a..b (either order) and scrolls to the first.
function selectLines(a, b, { scroll = true } = {}) {
	const [lo, hi] = a <= b ? [a, b] : [b, a];
	const first = lineEl(lo);
	if (!first) return false;
	clearHighlight();
	for (let n = lo; n <= hi; n++) lineEl(n)?.classList.add('hl');
	const c = first.closest('section.case');
	current = c ? cases.indexOf(c) : current;
	if (scroll) scrollTo(first);
	return true;
}

// followHash shows what location.hash names.
function followHash() {
	const h = decodeURIComponent(location.hash.slice(1));
	let m;
	if ((m = /^L(\d+)(?:-L?(\d+))?$/.exec(h))) {
		const a = Number(m[1]);
		anchorLine = a;
		selectLines(a, m[2] ? Number(m[2]) : a);
	} else if ((m = /^case-(.+)$/.exec(h))) {
		const i = caseIndex(m[1]);
		if (i >= 0) selectCase(i);
	}
}

function caseURL(key) {
	return new URL('#case-' + key, location.href).href;
}

async function copyLink(key, link) {
	const url = caseURL(key);
	if (link) link.dataset.copied = url;
	try {
		await navigator.clipboard.writeText(url);
		link?.classList.add('copied');
		setTimeout(() => link?.classList.remove('copied'), 1500);
		announce('Copied ' + url);
	} catch {
		// No clipboard (an insecure origin, or permission refused): show the
		// link so it can be copied by hand.
		announce(url);
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
			const [lo, hi] = anchorLine < n ? [anchorLine, n] : [n, anchorLine];
			history.replaceState(null, '', '#L' + lo + '-L' + hi);
			selectLines(lo, hi, { scroll: false });
			return;
		}
		anchorLine = n;
		history.pushState(null, '', '#L' + n);
		selectLines(n, n, { scroll: false });
		return;
	}
	const chip = t.closest('[data-case-select]');
	if (chip) {
		const i = caseIndex(chip.dataset.caseSelect);
		history.pushState(null, '', '#case-' + chip.dataset.caseSelect);
		selectCase(i, { scroll: false });
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
	switch (ev.key) {
		case 'j':
		case 'k': {
			if (!cases.length) return;
			const from = current >= 0 ? current : caseInView();
			let i = ev.key === 'j' ? from + 1 : from - 1;
			if (from < 0) i = 0;
			i = Math.max(0, Math.min(cases.length - 1, i));
			history.replaceState(null, '', '#case-' + cases[i].dataset.case);
			selectCase(i);
			break;
		}
		case 'y': {
			const i = current >= 0 ? current : caseInView();
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

// The live pane asks to show a case, or one line of it.
document.addEventListener('syncloop:goto', (ev) => {
	const { key, line } = ev.detail || {};
	const i = caseIndex(key);
	const at = line ? lineEl(line) : null;
	if (at && (i < 0 || at.closest('section.case') === cases[i])) {
		// The line is in its case's own lines: show that very line.
		anchorLine = line;
		history.replaceState(null, '', '#L' + line);
		selectLines(line, line);
		if (i >= 0) cases[i].classList.add('selected');
		return;
	}
	if (i >= 0) {
		// The line was logged from a helper the case calls (handleProbeSync
		// serves three cases): show the case, and mark the helper's line.
		history.replaceState(null, '', '#case-' + key);
		selectCase(i, { tell: false });
		if (at) {
			at.classList.add('hl');
			announce(`${key}: logged at line ${line}, in a helper the case calls`);
		}
	}
});

// A room's driver selected something; this reader follows.
document.addEventListener('syncloop:show', (ev) => {
	const { key, lo, hi } = ev.detail || {};
	if (lo && lineEl(lo)) {
		anchorLine = lo;
		history.replaceState(null, '', lo === hi || !hi ? '#L' + lo : '#L' + lo + '-L' + hi);
		selectLines(lo, hi || lo, { scroll: false });
		return;
	}
	const i = key ? caseIndex(key) : -1;
	if (i >= 0) {
		if (i !== current || !cases[i].classList.contains('selected')) {
			history.replaceState(null, '', '#case-' + key);
			selectCase(i, { scroll: false });
		}
		return;
	}
	if (current >= 0 || document.querySelector('.line.hl')) {
		clearHighlight();
		current = -1;
		history.replaceState(null, '', location.pathname + location.search);
	}
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

window.addEventListener('hashchange', followHash);
window.addEventListener('popstate', followHash);
// Module scripts run after parsing, in order: live.js has registered its
// listeners by now, so it hears about a case opened by link.
followHash();
