// room.js: a pair-reading room (see server/rooms/socket.go for the protocol).
// Everyone in the room reads the same page; one reader drives. The driver's
// selected case or lines and the source lines in view (not pixels: screens
// differ) go to the server; followers' pages show the same. A follower who
// scrolls or clicks on their own stops following until they resume, and
// sees where the driver is meanwhile.
//
// The page's selection is selection.js's: a room hears the reader's own
// selections there (a driver's are reported, a follower's pause following)
// and selects the driver's there, told as from 'room'.
//
// The driver key arrives in the driver link (?k=KEY). It is kept in this
// tab's sessionStorage and taken out of the address, so the address (and
// every case link copied from it) is a viewer link. A reader handed the
// wheel gets a wheel ticket from the server, kept there too, so that the
// wheel stays with them when they reload or open the room's other page; the
// server says when it stops working. Names are text only: they reach the
// page through textContent.

import { el, copyText, tabStore, tabStored, visible, linkKey, unlink, lineEl } from './dom.js';
import { COLORS, colorClass, readerColor, readerName, setReaderColor, setReaderName } from './identity.js';
import { ROOM_GONE, ROOM_FULL } from './codes.js';
import { Socket } from './socket.js';
import { heldRooms, holdRoom, driverLink } from './held.js';
import { current, onSelect, select } from './selection.js';
import { openNotes } from './notes-store.js';

const bar = document.getElementById('room');
const roomID = bar.dataset.room;
const feed = bar.dataset.feed;
const tag = bar.dataset.tag;
const page = bar.dataset.page || 'index'; // this page: "index", "pod-workers" or "volume-manager" (a volume room's /rooms/{id})
const notes = openNotes(tag); // the room's notes, which annotate.js writes
const $ = (sel) => bar.querySelector(sel);

// The driver key: from the link, else from an earlier load of this tab.
const keyName = 'syncloop-room-key-' + roomID;
const params = new URLSearchParams(location.search);
let key = linkKey(keyName);
unlink('k', 'ro');
if (key) holdRoom({ id: roomID, key, tag, cls: bar.dataset.class || '' });

// An instructor watching (the class page opens rooms with ?ro=1): their
// page writes no note and steers nothing, for this tab.
const watchName = 'syncloop-room-watch-' + roomID;
let watching = params.get('ro') === '1';
if (watching) tabStore(watchName, '1');
watching = watching || tabStored(watchName) === '1';
let ended = bar.hasAttribute('data-ended');

// The wheel ticket: from an earlier page of this tab, if the wheel was
// handed to it.
const wheelName = 'syncloop-room-wheel-' + roomID;
let wheel = tabStored(wheelName);
function setWheel(ticket) {
	wheel = ticket;
	tabStore(wheelName, ticket);
}


let myName = watching ? 'instructor (watching)' : readerName();
let myColor = readerColor();

let me = ''; // my reader id
let holdsKey = false; // the server accepted my driver key
let token = '';
let presented = ''; // the wheel ticket this connection joined with
let state = null; // the last {"t":"state"}
// A reader who opened a link to a place (a shared case) stays there: they
// start not following, and see where the driver is. A reload keeps what
// this tab was doing: a follower whose address took the driver's #case-…
// still follows; one who moved on purpose still reads on their own. (A link
// opened anew, even in this tab, is the link's place.)
const followName = 'syncloop-room-follow-' + roomID;
let following = !/^#(case-|L\d)/.test(location.hash);
const navType = performance.getEntriesByType('navigation')[0]?.type;
const wasFollowing = tabStored(followName); // with no storage, the address decides
// A follower who opened the room's other page on purpose (movedName, set
// by the click) reads it on their own, as after a scroll.
const movedName = 'syncloop-room-moved-' + roomID;
const moved = tabStored(movedName) === '1';
tabStore(movedName, '');
if (wasFollowing && (navType === 'reload' || navType === 'back_forward' || moved)) following = wasFollowing === '1';
function keepFollowing(on) {
	tabStore(followName, on ? '1' : '0');
}
// Kept from the start, not only after a pause or resume: a follower's
// address soon says the driver's case, and on reload that address must not
// pass for a place the follower chose.
keepFollowing(following);
let lastApplied = '';
let lastSent = '';

let sock = null; // the room's socket (socket.js)
function send(m) {
	sock?.send(m);
}

// connect opens the room's socket, which comes back after a close: each
// time it joins again, with the driver key or the wheel ticket.
function connect() {
	const role = $('[data-room-role]');
	sock = new Socket(() => `/rooms/${roomID}/ws`, {
		min: 500,
		max: 10000,
		open: (s) => {
			s.connected();
			const join = { t: 'join', color: myColor };
			if (myName) join.name = myName;
			if (watching) join.watch = true; // an instructor's watch: never one of the room's readers
			if (key) join.key = key;
			else if (wheel) join.wheel = wheel;
			presented = join.wheel || '';
			s.send(join);
			if (!following) s.send({ t: 'follow', on: false });
		},
		message: (data) => {
			let m;
			try {
				m = JSON.parse(data);
			} catch {
				return;
			}
			handle(m);
		},
		refused: { [ROOM_GONE]: 'this room expired', [ROOM_FULL]: 'room full' },
		gone: (text) => (role.textContent = text),
		node: role,
		say: (s) => `reconnecting in ${s} s`,
		retrying: () => (role.textContent = 'reconnecting…'),
	});
}

// leave: this page goes (a reload, the room's other page); its socket's
// close is not a reason to reconnect.
function leave() {
	sock?.stop();
}

function handle(m) {
	switch (m.t) {
		case 'welcome':
			me = m.you;
			holdsKey = !!m.key;
			token = m.token || '';
			lastSent = '';
			if (!holdsKey && key) key = ''; // refused: do not present it again
			if (presented && !m.wheel && wheel === presented) setWheel(''); // taken back while this tab was away
			render();
			break;
		case 'state': {
			const wasDriving = driving();
			state = m;
			if (m.ended) endedNow();
			render();
			if (driving() && !wasDriving) reportSoon();
			if (!driving() && following && m.at) follow(m.at);
			break;
		}
		case 'at':
			if (!state) break;
			state.at = m.at;
			renderWhere(reader(state.driver));
			if (!driving() && following && m.at) follow(m.at);
			break;
		case 'wheel':
			setWheel(m.wheel);
			break;
		case 'token':
			token = m.token;
			render();
			break;
		case 'reload':
			leave();
			location.reload();
			break;
		case 'error':
			showError(m.error);
			break;
		case 'note':
			showError(m.note, true);
			break;
	}
}

function showError(text, note = false) {
	const p = $('[data-room-error]');
	p.textContent = text;
	p.classList.toggle('note', note);
	p.hidden = false;
	clearTimeout(showError.timer);
	showError.timer = setTimeout(() => (p.hidden = true), 6000);
}

function driving() {
	return !!state && !!me && state.driver === me;
}

function reader(id) {
	return state?.readers.find((r) => r.id === id);
}

// --- what the page shows -------------------------------------------------

function render() {
	if (!state) return;
	const drv = reader(state.driver);
	const role = $('[data-room-role]');
	role.replaceChildren();
	if (driving()) role.append(el('strong', '', 'You are driving'), ': the others follow what you select and scroll to.');
	else if (!drv) role.append('No one is driving.');
	else if (following) role.append('You follow ', nameChip(drv), '.');
	else role.append('You are reading on your own.');

	const people = $('[data-room-people]');
	people.replaceChildren();
	for (const r of state.readers) {
		const li = el('li', colorClass(r.color));
		li.append(el('span', 'dot'), el('span', 'who', visible(r.name) + (r.id === me ? ' (you)' : '')));
		let what = 'reads on their own';
		if (r.driving) what = 'drives';
		else if (r.following && drv) what = 'follows ' + visible(drv.name);
		li.append(el('span', 'what', what));
		li.title = visible(r.name) + (r.key ? ', holds the driver link' : '') + ': ' + what;
		people.append(li);
	}

	$('[data-room-take]').hidden = !holdsKey || driving() || watching;
	$('[data-room-endbox]').hidden = ended || watching || !(driving() || holdsKey);
	$('[data-room-paused]').hidden = driving() || following || !drv;
	$('[data-room-driverlink]').hidden = !holdsKey;

	const hand = $('[data-room-hand]');
	hand.hidden = !driving() || state.readers.length < 2;
	const sel = $('[data-room-hand-to]');
	const chosen = sel.value;
	sel.replaceChildren();
	for (const r of state.readers) {
		if (r.id === me) continue;
		const o = el('option', '', visible(r.name));
		o.value = r.id;
		sel.append(o);
	}
	if (chosen) sel.value = chosen;

	renderFeed();
	renderVersion();
	renderWhere(drv);
}

function nameChip(r) {
	const s = el('span', 'name ' + colorClass(r.color));
	s.append(el('span', 'dot'), visible(r.name));
	return s;
}

function renderFeed() {
	const box = $('[data-room-feedbox]');
	box.hidden = !holdsKey || !token;
	if (box.hidden) return;
	const base = `syncloop relay --server ${location.origin} --feed ${feed} --token ${token}`;
	const journal = 'ssh user@worker sudo journalctl -u kubelet -f -o json --all';
	$('[data-room-cmd]').textContent = `${base} --cmd "${journal}"`;
	$('[data-room-cmd-stdin]').textContent = `${journal} | ${base}`;
	// Nothing to install: the worker's journal straight to the feed's
	// journal route (the same storing as the relay's, resends dropped).
	$('[data-room-cmd-curl]').textContent = `ssh user@worker 'sudo journalctl -u kubelet -f -o json --all' | curl -sS --no-buffer -T - -H 'Authorization: Bearer ${token}' ${location.origin}/feeds/${feed}/journal`;
}

// renderVersion: the journal's kubelet runs another version than the room
// reads; the driver can switch the room's tag in one click.
function renderVersion() {
	const p = $('[data-room-version]');
	const v = (state.kubelet_version || '').split('+')[0];
	const other = /^v\d+\.\d+\.\d+$/.test(v) && v !== state.tag;
	p.hidden = !other;
	p.replaceChildren();
	if (!other) return;
	p.append(`The journal's kubelet runs ${v}; this room reads ${state.tag}, so its log lines may point at other line numbers. `);
	if (driving()) {
		const b = el('button', '', `Switch the room to ${v}`);
		b.type = 'button';
		b.addEventListener('click', () => send({ t: 'tag', tag: v }));
		p.append(b);
	} else {
		p.append('The driver can switch the room to it.');
	}
}

// renderWhere says where the driver is, and marks their case in the margin.
function renderWhere(drv) {
	const w = $('[data-room-where]');
	w.replaceChildren();
	for (const e of document.querySelectorAll('.driver-here')) e.classList.remove('driver-here', ...colorClasses());
	const at = state.at;
	if (!drv || !at || driving()) return;
	const c = at.case || caseAt(at.lo || at.first);
	if (c) {
		const sec = document.getElementById('case-' + c);
		sec?.classList.add('driver-here', colorClass(drv.color));
	}
	if (following) return;
	let where = at.lo ? `lines ${at.lo}–${at.hi || at.lo}` : at.case ? `case ${at.case}` : at.first ? `lines ${at.first}–${at.last}` : at.where || 'the top';
	if ((at.page || 'index') !== page) where = at.page === 'pod-workers' ? 'the pod_workers page' : 'the function';
	w.append(nameChip(drv), ` is at ${where} `);
	const go = el('button', '', 'Go there');
	go.type = 'button';
	go.addEventListener('click', resume);
	w.append(go);
}

function colorClasses() {
	return Array.from({ length: COLORS }, (_, i) => 'rc-' + i);
}

function caseAt(line) {
	if (!line) return '';
	for (const s of document.querySelectorAll('section.case[data-case]')) {
		if (line >= Number(s.dataset.start) && line <= Number(s.dataset.end)) return s.dataset.case;
	}
	return '';
}

// --- the driver reports where they are -----------------------------------

// barHeight is how much of the window the bar covers: on a narrow window
// it is not sticky and scrolls away with the page.
function barHeight() {
	return Math.max(0, bar.getBoundingClientRect().bottom);
}

// The function's source lines, in page order: what "in view" is counted in.
const codeLines = [...document.querySelectorAll('.docco span.line[id^="L"]')];

// visibleLines is the first and last source line in the window, below the bar.
function visibleLines() {
	const top = Math.max(0, barHeight());
	const bottom = window.innerHeight;
	let lo = 0;
	let hi = codeLines.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (codeLines[mid].getBoundingClientRect().bottom <= top) lo = mid + 1;
		else hi = mid;
	}
	if (lo >= codeLines.length || codeLines[lo].getBoundingClientRect().top >= bottom) return [0, 0];
	let last = lo;
	let a = lo;
	let b = codeLines.length - 1;
	while (a <= b) {
		const mid = (a + b) >> 1;
		if (codeLines[mid].getBoundingClientRect().top < bottom) {
			last = mid;
			a = mid + 1;
		} else b = mid - 1;
	}
	return [Number(codeLines[lo].id.slice(1)), Number(codeLines[last].id.slice(1))];
}

const sections = [...document.querySelectorAll('article.text > section[id], article.text > details[id], main.pod-workers section[id], main.volume-manager > section[id]')];

// readingY is the height in the window where a reader reads: a third of the
// way down what the bar leaves.
function readingY() {
	const top = barHeight();
	return top + (window.innerHeight - top) / 3;
}

// reading is what the reader reads: the case block (note or code) across the
// reading height, else the page's section there, with how far into it
// (per mille of its height), so a follower reads the same paragraph of a
// note even where no code line is in view.
function reading() {
	const y = readingY();
	const candidates = [...document.querySelectorAll('section.case[id]'), ...sections];
	for (const e of candidates) {
		const r = e.getBoundingClientRect();
		if (r.top <= y && r.bottom > y && r.height > 0) {
			return { where: e.id, per: Math.max(0, Math.min(1000, Math.round(((y - r.top) / r.height) * 1000))) };
		}
	}
	return { where: sectionInView(), per: 0 };
}

function sectionInView() {
	const top = barHeight() + 8;
	let id = '';
	for (const s of sections) if (s.getBoundingClientRect().top <= top) id = s.id;
	return id;
}

function position() {
	const sel = document.querySelector('section.case.selected');
	const hl = document.querySelectorAll('.line.hl');
	const [first, last] = visibleLines();
	const p = { page, case: sel?.dataset.case || '', first, last, ...reading() };
	if (hl.length) {
		p.lo = Number(hl[0].id.slice(1));
		p.hi = Number(hl[hl.length - 1].id.slice(1));
	}
	return p;
}

function report() {
	reportSoon.timer = 0;
	if (!driving()) return;
	const p = position();
	const s = JSON.stringify(p);
	if (s === lastSent) return;
	lastSent = s;
	send({ t: 'at', ...p });
}

// reportSoon sends the driver's position at most every 150 ms, the last
// one always.
function reportSoon() {
	if (!reportSoon.timer) reportSoon.timer = setTimeout(report, 150);
}

// --- a follower follows --------------------------------------------------

function inView(e) {
	const r = e.getBoundingClientRect();
	return r.bottom > barHeight() && r.top < window.innerHeight;
}

function scrollToEl(e) {
	window.scrollTo({ top: e.getBoundingClientRect().top + window.scrollY - barHeight() - 4, behavior: 'instant' });
}

// pageURL is this room's page of a kind.
function pageURL(kind) {
	return `/rooms/${roomID}` + (kind === 'pod-workers' ? '/pod-workers' : '');
}

function follow(at) {
	const s = JSON.stringify(at);
	if (s === lastApplied) return;
	lastApplied = s;
	if ((at.page || 'index') !== page) {
		// The driver is on the room's other page: go there (the new page
		// follows once it has joined).
		leave();
		location.assign(pageURL(at.page));
		return;
	}
	show(at);
	const anchor = at.where && document.getElementById(at.where);
	if (anchor) {
		// The same place in the same block (a case's note or code, a
		// section), at the same fraction of its height, at the reading
		// height: screens differ, paragraphs stay.
		const r = anchor.getBoundingClientRect();
		window.scrollTo({ top: window.scrollY + r.top + (r.height * (at.per || 0)) / 1000 - readingY(), behavior: 'instant' });
	} else if (lineEl(at.first)) {
		scrollToEl(lineEl(at.first));
	} else if (!at.first) {
		window.scrollTo({ top: 0, behavior: 'instant' });
	}
	if (!anchor) {
		const sel = lineEl(at.lo) || (at.case && document.getElementById('case-' + at.case));
		if (sel && !inView(sel)) scrollToEl(sel);
	}
}

// show selects what the driver selected (selection.js, from 'room'): a
// line or lines this page has, else their case, else nothing.
function show(at) {
	const next = at.lo && lineEl(at.lo) ? { key: at.case, lo: at.lo, hi: at.hi || at.lo } : { key: at.case && caseSection(at.case) ? at.case : '' };
	const s = current();
	if (s.key === (next.key || '') && s.lo === (next.lo || 0) && s.hi === (next.hi || 0)) return;
	select(next, { from: 'room' });
}

function caseSection(key) {
	return document.querySelector(`section.case[data-case="${CSS.escape(key)}"]`);
}

function pause() {
	if (driving() || !following || !state?.driver) return;
	following = false;
	keepFollowing(false);
	send({ t: 'follow', on: false });
	render();
}

function resume() {
	following = true;
	keepFollowing(true);
	lastApplied = '';
	send({ t: 'follow', on: true });
	render();
	if (state?.at) follow(state.at);
}

// The reader's own moves: wheel, touch, keys that scroll, clicks in the text.
const moveKeys = new Set(['ArrowUp', 'ArrowDown', 'PageUp', 'PageDown', 'Home', 'End', ' ', 'j', 'k']);
window.addEventListener('wheel', () => (driving() ? reportSoon() : pause()), { passive: true });
window.addEventListener('touchmove', () => (driving() ? reportSoon() : pause()), { passive: true });
document.addEventListener('keydown', (ev) => {
	const t = ev.target;
	if (t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
	if (moveKeys.has(ev.key) && !driving()) pause();
});
document.addEventListener('click', (ev) => {
	if (!driving() && ev.target instanceof Element && ev.target.closest('article.text')) pause();
	if (driving()) setTimeout(reportSoon, 0); // after reader.js has handled it
});
// A link to the room's other page (the nav's pod_workers, say), followed
// by a follower on purpose: following pauses, as a scroll does, and the
// page it opens stays paused (movedName).
document.addEventListener('click', (ev) => {
	const a = ev.target instanceof Element && ev.target.closest('a[href]');
	if (!a || driving() || !following) return;
	const u = new URL(a.href, location.href);
	const other = pageURL(page === 'pod-workers' ? 'index' : 'pod-workers');
	if (u.origin !== location.origin || u.pathname.replace(/\/$/, '') !== other) return;
	pause();
	if (!following) tabStore(movedName, '1');
});
// A selection the reader made (not the driver's, applied here): a driver's
// is reported, a follower stops following.
onSelect((_, how) => {
	if (how.from === 'room') return;
	if (driving()) reportSoon();
	else pause();
});
window.addEventListener('scroll', () => driving() && reportSoon(), { passive: true });
window.addEventListener('hashchange', () => driving() && reportSoon());
window.addEventListener('resize', () => driving() && reportSoon());

// --- the bar's controls --------------------------------------------------

// copy copies text (dom.js: with no clipboard, it shows the text to copy
// by hand); the button keeps what it copied, for a test to read.
function copy(text, what, button) {
	if (button) button.dataset.copied = text;
	return copyText(text, what);
}

function viewerLink(hash) {
	return `${location.origin}/rooms/${roomID}${hash || ''}`;
}

function currentCase() {
	const sel = document.querySelector('section.case.selected');
	if (sel) return sel.dataset.case;
	const [first] = visibleLines();
	return caseAt(first);
}

if (page !== 'index') $('[data-room-share]').textContent = 'Share this place';
$('[data-room-share]').addEventListener('click', (ev) => {
	if (page !== 'index') {
		const w = sectionInView();
		copy(location.origin + pageURL(page) + (w ? '#' + w : ''), 'a viewer link to this place', ev.currentTarget);
		return;
	}
	const c = currentCase();
	copy(viewerLink(c ? '#case-' + c : ''), c ? `a viewer link to case ${c}` : 'the viewer link', ev.currentTarget);
});
$('[data-room-invite]').addEventListener('click', (ev) => copy(viewerLink(''), 'the viewer link', ev.currentTarget));
$('[data-room-copy-driver]').addEventListener('click', (ev) => copy(`${viewerLink('')}?k=${encodeURIComponent(key)}`, 'the driver link', ev.currentTarget));
$('[data-room-copy-cmd]').addEventListener('click', (ev) => copy($('[data-room-cmd]').textContent, 'the relay command', ev.currentTarget));
$('[data-room-copy-curl]').addEventListener('click', (ev) => copy($('[data-room-cmd-curl]').textContent, 'the curl command', ev.currentTarget));
$('[data-room-rotate]').addEventListener('click', () => send({ t: 'rotate' }));
$('[data-room-resume]').addEventListener('click', resume);
$('[data-room-take]').addEventListener('click', () => send({ t: 'take' }));
$('[data-room-hand-go]').addEventListener('click', () => {
	const to = $('[data-room-hand-to]').value;
	if (to) send({ t: 'hand', to });
});
const panel = document.getElementById('room-panel');
function showPanel(on) {
	panel.hidden = !on;
	$('[data-room-more]').setAttribute('aria-expanded', String(on));
}
$('[data-room-more]').addEventListener('click', () => showPanel(panel.hidden));
// The panel drops over the page: a click on the page or Escape closes it.
document.addEventListener('click', (ev) => {
	if (!panel.hidden && ev.target instanceof Node && !bar.contains(ev.target)) showPanel(false);
});
document.addEventListener('keydown', (ev) => {
	if (ev.key === 'Escape' && !panel.hidden) showPanel(false);
});

const nameInput = $('[data-room-name]');
nameInput.value = myName;
nameInput.placeholder = 'a name the others see';
nameInput.addEventListener('change', () => {
	const n = setReaderName(nameInput.value);
	if (!n) return;
	myName = n;
	send({ t: 'name', name: n, color: myColor });
	if (askedName) showPanel(false);
});

const colors = $('[data-room-colors]');
for (let i = 0; i < COLORS; i++) {
	const b = el('button', 'swatch rc-' + i);
	b.type = 'button';
	b.setAttribute('role', 'radio');
	b.setAttribute('aria-label', 'colour ' + (i + 1));
	b.setAttribute('aria-checked', String(i === myColor));
	b.addEventListener('click', () => {
		myColor = i;
		setReaderColor(i);
		for (const s of colors.children) s.setAttribute('aria-checked', String(s === b));
		send({ t: 'name', name: myName || reader(me)?.name || 'reader', color: i });
	});
	colors.append(b);
}

// A first-time reader with no name is asked in the panel, once.
const askedName = !myName;
if (askedName) {
	showPanel(true);
	nameInput.focus();
}

// The bar's height is where the sticky code and the live pane start: it
// changes when the bar wraps on a narrow window. (Setting a custom
// property through the CSSOM is not an inline style: the CSP allows it.)
new ResizeObserver(() => {
	const sticky = getComputedStyle(bar).position === 'sticky';
	document.documentElement.style.setProperty('--room-h', sticky ? Math.ceil(bar.getBoundingClientRect().height) + 'px' : '0px');
}).observe(bar);

// --- ending the room, and the rooms this browser holds --------------------

// endedNow turns the page read-only: the room was ended (here or by
// another reader). Its notes are read-only too (notes-store.js).
function endedNow() {
	if (ended && endedNow.done) return;
	ended = endedNow.done = true;
	$('[data-room-ended]').hidden = false;
	$('[data-room-endbox]').hidden = true;
	document.body.classList.add('room-ended');
	notes.readOnly('This room was ended: its notes are read-only. Its worksheet can still be downloaded.');
}

const endDialog = $('[data-room-end-dialog]');
$('[data-room-end]').addEventListener('click', () => endDialog.showModal());
endDialog.addEventListener('close', () => {
	if (endDialog.returnValue === 'end') send({ t: 'end' });
});

function renderHeld() {
	const list = heldRooms().filter((r) => r.id !== roomID);
	$('[data-room-held]').hidden = list.length === 0;
	const ul = $('[data-room-held-list]');
	ul.replaceChildren();
	for (const r of list) {
		const li = el('li');
		const a = el('a', '', `Room ${r.id.slice(0, 6)}… at ${r.tag}`);
		a.href = driverLink(r);
		li.append(a, ` (opened ${new Date(r.at).toLocaleString()})`);
		ul.append(li);
	}
}
renderHeld();

// --- handing in (a class's room: classes/handin.go) ----------------------

// handedInNow turns the page read-only, as an ended room's: the room was
// handed in at at (here, or before this page opened).
function handedInNow(at, why) {
	const t = new Date(at);
	const hhmm = String(t.getHours()).padStart(2, '0') + ':' + String(t.getMinutes()).padStart(2, '0');
	const shown = $('[data-room-handedin]');
	shown.textContent = `Handed in at ${hhmm}`;
	shown.title = t.toLocaleString();
	shown.hidden = false;
	$('[data-room-handin]').hidden = true;
	document.body.classList.add('room-handed-in');
	notes.readOnly(why || 'This room was handed in: its notes are read-only; your instructor can reopen it.');
}

const handinButton = $('[data-room-handin]');
if (handinButton) {
	fetch(`/rooms/${encodeURIComponent(roomID)}/handin`).then((r) => (r.ok ? r.json() : null)).then((s) => {
		if (s?.handed_in) handedInNow(s.handed_in, s.message);
		else handinButton.hidden = ended || watching;
	}).catch(() => {});
	handinButton.addEventListener('click', async () => {
		if (!confirm('Hand in this room\'s worksheet now? It is frozen as it is, for your instructor, and no one in the room can change a note after it unless your instructor reopens the room.')) return;
		handinButton.disabled = true;
		try {
			const r = await fetch(`/rooms/${encodeURIComponent(roomID)}/handin`, { method: 'POST' });
			const s = await r.json().catch(() => ({}));
			if (r.ok && s.handed_in) handedInNow(s.handed_in, s.message);
			else showError(`Not handed in: ${s.error || 'the server answered ' + r.status}.`);
		} catch {
			showError('Not handed in: the server could not be reached; try again.');
		} finally {
			handinButton.disabled = false;
		}
	});
}

if (ended) endedNow();
if (watching) {
	following = true;
	document.body.classList.add('room-watching');
	notes.readOnly('You are watching this room: notes are read-only on this page.');
}

connect();
