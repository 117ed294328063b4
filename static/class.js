// class.js: a class's page (server/classes). For everyone, the students'
// half: a name, a button that starts a pair room of the class, and the
// class's rooms to join, looked at every few seconds. With the instructor
// key (the instructor link's ?k=, kept in this tab's sessionStorage and
// taken out of the address, as room.js does a driver key), the
// instructor's panel: every room live (GET /classes/{id}/events, read with
// fetch so that the key goes in a header, not in an address), every
// hand-in in one zip, the class's settings. Names and everything else the
// server sends reach the page as text (textContent), never as HTML.

import { el, copyText, Backoff, linkKey, unlink, tabStore } from './dom.js';
import { readerName, setReaderName } from './identity.js';
import { heldRooms, driverLink } from './held.js';
import { startGrid } from './grid.js';

const student = document.querySelector('[data-class]');
const panel = document.querySelector('[data-class-instructor]');
const classID = student?.dataset.class || '';

if (classID) {
	// The instructor key: from the link, else from an earlier load of this tab.
	const keyName = 'syncloop-class-key-' + classID;
	const key = linkKey(keyName);
	unlink('k');

	startStudents(!!key);
	if (key) startInstructor(key, keyName);
}

// --- the students' half ---------------------------------------------------

// startStudents runs the students' half; on the instructor's own page
// (instructing) it says no name to the roster.
function startStudents(instructing) {
	// (an ended class's page has no form: a name stands in for it)
	const name = document.querySelector('[data-class-name]') || el('input');
	name.value = readerName();
	const keepName = () => setReaderName(name.value);
	name.addEventListener('change', () => {
		keepName();
		hello();
	});
	// A room is started by a student: their session (the cookie the
	// hello sets) must be there before the form goes.
	const form = document.querySelector('[data-class-start-form]');
	form?.addEventListener('submit', async (e) => {
		e.preventDefault();
		keepName();
		if (await hello()) form.submit();
	});

	// The roster: this browser's name, said to the class on a name, and
	// every minute while the page is open (the instructor sees "seen").
	const said = document.querySelector('[data-class-name-said]') || el('span');
	let ended = !document.querySelector('[data-class-ended]').hidden;
	// One hello at a time: the first gives this browser its session, and
	// a second sent alongside it (a name's change, then the form's submit)
	// would be another student under the same name.
	let saying = null;
	function hello() {
		saying ||= sayHello().finally(() => { saying = null; });
		return saying;
	}
	async function sayHello() {
		const n = name.value.trim().slice(0, 32);
		if (!n || ended || instructing) return false;
		try {
			const r = await fetch(`/classes/${classID}/hello`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json' },
				body: JSON.stringify({ name: n }), // who this browser is, is the session cookie
				keepalive: true, // said even as the form takes the page to a room
			});
			const j = await r.json().catch(() => ({}));
			if (r.status === 410) return showEnded(), false;
			if (!r.ok) throw new Error(j.error || r.statusText);
			said.textContent = `Your instructor sees you as ${j.name}.`;
			return true;
		} catch (err) {
			said.textContent = `Your instructor does not see your name yet (${err.message}).`;
			return false;
		}
	}
	hello();
	setInterval(() => document.visibilityState === 'visible' && hello(), 60000);

	function showEnded() {
		ended = true;
		document.querySelector('[data-class-start-form]')?.remove();
		document.querySelector('[data-class-ended]').hidden = false;
		document.querySelector('[data-class-lead]').hidden = true;
	}

	const list = document.querySelector('[data-class-pairs]');
	const count = document.querySelector('[data-class-count]');
	async function look() {
		let p;
		try {
			const r = await fetch(`/classes/${classID}/pairs.json`, { cache: 'no-store' });
			if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
			p = await r.json();
		} catch (err) {
			count.textContent = `(could not look: ${err.message}; trying again)`;
			return;
		}
		if (p.ended && !ended) showEnded();
		count.textContent = p.ended ? `(${p.held}, all ended)` : `(${p.held} of ${p.budget})`;
		list.replaceChildren();
		if (!p.rooms.length) list.append(el('li', 'class-empty', 'No room yet: start the first one.'));
		// Numbered oldest first, as the instructor's page numbers them: one
		// name for a room in the room ("join Room 3").
		for (const [i, r] of p.rooms.entries()) {
			const li = el('li', r.ended ? 'ended' : '');
			const who = r.readers.length ? r.readers.map((n) => (n === r.driver ? `${n} (drives)` : n)).join(', ') : 'no one in it now';
			li.append(el('span', 'class-room-n', `Room ${i + 1}`), el('span', 'class-who', who), el('span', 'class-since', `started ${ago(r.created)}`));
			if (r.ended || p.ended) {
				li.append(el('span', 'class-badge', 'ended'));
			} else {
				const a = el('a', 'button', 'Join');
				a.href = `/rooms/${encodeURIComponent(r.id)}`;
				a.dataset.classJoin = r.id;
				a.addEventListener('click', keepName);
				a.setAttribute('aria-label', `Join Room ${i + 1}: ${who}`);
				li.append(' ', a);
			}
			list.append(li);
		}
	}
	look();
	setInterval(() => document.visibilityState === 'visible' && look(), 3000);

	const held = heldRooms();
	document.querySelector('[data-class-held]').hidden = held.length === 0;
	const ul = document.querySelector('[data-class-held-list]');
	for (const r of held) {
		const li = el('li');
		const a = el('a', '', `Room ${r.id.slice(0, 6)}… at ${r.tag}`);
		a.href = driverLink(r);
		li.append(a, r.cls === classID ? ' (this class)' : '', ` · opened ${new Date(r.at).toLocaleString()}`);
		ul.append(li);
	}
}


// --- the instructor's panel -----------------------------------------------

function startInstructor(key, keyName) {
	const auth = { Authorization: 'Bearer ' + key };
	const live = document.querySelector('[data-class-live]');
	const backoff = new Backoff(1000, 15000);
	const grid = startGrid(classID, auth);
	let shown = null; // the last overview drawn
	const link = location.origin + '/classes/' + classID;
	document.querySelector('[data-class-link]').textContent = link;
	document.querySelector('[data-class-copy]').addEventListener('click', () => copyText(link, 'the class link'));
	document.querySelector('[data-class-copy-key]').addEventListener('click', () => copyText(`${link}?k=${encodeURIComponent(key)}`, 'your instructor link'));

	function refused() {
		tabStore(keyName, '');
		panel.hidden = true;
		const p = el('p', 'class-refused', "This tab's instructor key is not this class's: open the instructor link again.");
		p.setAttribute('role', 'alert');
		panel.before(p);
	}

	async function stream() {
		let resp;
		try {
			resp = await fetch(`/classes/${classID}/events`, { headers: auth, cache: 'no-store' });
		} catch {
			return retry();
		}
		if (resp.status === 401) return refused();
		if (!resp.ok) return retry();
		panel.hidden = false;
		document.body.classList.add('class-instructing');
		backoff.reset();
		live.textContent = 'live';
		live.classList.add('on');
		const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
		let buf = '';
		try {
			for (;;) {
				const { value, done } = await reader.read();
				if (done) break;
				buf += value;
				let i;
				while ((i = buf.indexOf('\n\n')) >= 0) {
					event(buf.slice(0, i));
					buf = buf.slice(i + 2);
				}
			}
		} catch {
			// dropped: reconnect
		}
		retry();
	}
	function retry() {
		live.classList.remove('on');
		const ms = backoff.next();
		live.textContent = `reconnecting in ${Math.ceil(ms / 1000)} s…`;
		setTimeout(stream, ms);
	}
	function event(block) {
		let type = 'message';
		let data = '';
		for (const line of block.split('\n')) {
			if (line.startsWith('event: ')) type = line.slice(7);
			else if (line.startsWith('data: ')) data += line.slice(6);
		}
		if (type === 'overview') {
			render((shown = JSON.parse(data)));
			grid.refresh();
		}
		if (type === 'gone') live.textContent = 'this class ended';
	}
	stream();
	// "N s ago" ages between changes.
	setInterval(() => shown && document.visibilityState === 'visible' && render(shown), 10000);

	document.querySelector('[data-class-handins]').addEventListener('click', async (ev) => {
		const b = ev.currentTarget;
		b.disabled = true;
		try {
			const r = await fetch(`/classes/${classID}/handins.zip`, { headers: auth, cache: 'no-store' });
			if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
			const url = URL.createObjectURL(await r.blob());
			const a = el('a');
			a.href = url;
			a.download = `syncloop-handins-${classID.slice(0, 6).toLowerCase()}.zip`;
			document.body.append(a);
			a.click();
			a.remove();
			setTimeout(() => URL.revokeObjectURL(url), 10000);
		} catch (err) {
			document.querySelector('[data-class-said]').textContent = 'Could not download the hand-ins: ' + err.message;
		} finally {
			b.disabled = false;
		}
	});

	// Ending, with a confirmation: the class (every room), or one room.
	const dialog = document.querySelector('[data-class-confirm]');
	function confirmThen(heading, text, yes, act) {
		dialog.querySelector('[data-class-confirm-h]').textContent = heading;
		dialog.querySelector('[data-class-confirm-text]').textContent = text;
		dialog.querySelector('[data-class-confirm-yes]').textContent = yes;
		dialog.returnValue = '';
		dialog.onclose = () => dialog.returnValue === 'yes' && act();
		dialog.showModal();
	}
	const told = document.querySelector('[data-class-said]');
	async function post(path, done, failed) {
		try {
			const r = await fetch(path, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{}' });
			const j = await r.json().catch(() => ({}));
			if (!r.ok) throw new Error(j.error || r.statusText);
			told.textContent = done;
			clearTimeout(told.timer);
			told.timer = setTimeout(() => (told.textContent = ''), 8000);
			return j;
		} catch (err) {
			told.textContent = `${failed}: ${err.message}`;
			return null;
		}
	}
	document.querySelector('[data-class-end]').addEventListener('click', () => {
		const open = (shown?.rooms || []).filter((r) => !r.ended).length;
		confirmThen('End the class?',
			`Its ${open} open room${open === 1 ? '' : 's'} turn${open === 1 ? 's' : ''} read-only, no student can start or join another, and the class link says the class has ended. Every hand-in stays downloadable here. This cannot be undone.`,
			'End the class', async () => {
				const c = await post(`/classes/${classID}/end`, 'The class ended.', 'Could not end the class');
				if (c && shown) render((shown = { ...shown, class: c }));
			});
	});
	document.querySelector('[data-class-rooms]').addEventListener('click', (ev) => {
		const b = ev.target.closest('[data-class-end-room]');
		if (!b) return;
		const id = b.dataset.classEndRoom;
		const label = b.dataset.label;
		confirmThen(`End ${label}?`,
			`${label} turns read-only for everyone in it: no note can be written or changed, and no relay can feed it. Its hand-in stays downloadable. This cannot be undone.`,
			`End ${label}`, () => post(`/classes/${classID}/rooms/${encodeURIComponent(id)}/end`, `${label} ended.`, `Could not end ${label}`));
	});

	const form = document.querySelector('[data-class-settings]');
	const said = document.querySelector('[data-class-settings-said]');
	// The due time is the server's UTC; the field shows and takes the
	// browser's local time (classes/handin.go).
	const local = (t) => new Date(t.getTime() - t.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
	if (form.due.dataset.classDue) form.due.value = local(new Date(form.due.dataset.classDue));
	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		const body = { budget: Number(form.budget.value), hide_notes: form.hide_notes.checked, pod: form.pod.value.trim(),
			due: form.due.value ? new Date(form.due.value).toISOString() : '', release: form.release.value };
		try {
			const r = await fetch(`/classes/${classID}/settings`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
			const j = await r.json();
			if (!r.ok) throw new Error(j.error || r.statusText);
			said.textContent = `Saved: ${j.budget} rooms at most; the site's notes ${j.hide_notes ? 'hidden' : 'shown'} in the rooms (from their next page load); the lab checks look for ${j.pod}; ${j.due ? 'due ' + new Date(j.due).toLocaleString() : 'no due time'}.`;
			grid.refresh();
		} catch (err) {
			said.textContent = 'Not saved: ' + err.message;
		}
	});
}

function ago(t) {
	const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
	if (s < 60) return `${s} s ago`;
	if (s < 3600) return `${Math.round(s / 60)} min ago`;
	return `${Math.round(s / 3600)} h ago`;
}

// render draws the instructor's table: one row a room, oldest first.
function render(o) {
	const tbody = document.querySelector('[data-class-rooms]');
	const cap = document.querySelector('[data-class-caption]');
	const rooms = o.rooms || [];
	const open = rooms.filter((r) => !r.ended).length;
	const classEnded = !!o.class.ended;
	cap.textContent = rooms.length
		? `${rooms.length} room${rooms.length === 1 ? '' : 's'} (${open} open, ${rooms.length - open} ended) of ${o.class.budget} at most. Fired counts a relay's real journal lines, never the demo's.`
		: 'No room yet: rooms appear here as your students start them.';
	document.querySelector('[data-class-end]').hidden = classEnded;
	// An ended class takes no settings (the server refuses them): they
	// stay on view, read-only, as they were at the end.
	const settings = document.querySelector('[data-class-settings]');
	for (const e of settings.elements) e.disabled = classEnded;
	settings.querySelector('button[type="submit"]').hidden = classEnded;
	settings.classList.toggle('class-settings-ended', classEnded);
	if (classEnded) settings.querySelector('[data-class-settings-said]').textContent = 'Kept as they were when the class ended.';
	const banner = document.querySelector('[data-class-ended-banner]');
	banner.hidden = !classEnded;
	if (classEnded) {
		banner.textContent = `You ended this class on ${new Date(o.class.ended).toLocaleString()}: its rooms are read-only and its link tells students so. The hand-ins stay downloadable here.`;
	}
	// Rooms are numbered oldest first, for people; the id is in the link.
	const label = new Map(rooms.map((r, i) => [r.id, `Room ${i + 1}`]));
	renderRoster(o.students || [], label, classEnded);
	tbody.replaceChildren();
	for (const r of rooms) {
		const tr = el('tr', r.ended ? 'ended' : '');
		tr.dataset.classRoom = r.id;

		const name = el('th');
		name.scope = 'row';
		const a = el('a', '', label.get(r.id));
		a.href = `/rooms/${encodeURIComponent(r.id)}?ro=1`;
		a.target = '_blank';
		a.rel = 'noopener';
		a.title = `Open room ${r.id.slice(0, 6)}… read-only, in a new tab`;
		name.append(a, el('span', 'class-tag', r.tag));
		if (r.ended) name.append(el('span', 'class-badge', 'ended'));
		tr.append(cell('Room', name));

		const who = el('td');
		if (!r.readers.length) who.append(el('span', 'muted', 'no one now'));
		for (const n of r.readers) {
			const s = el('span', n === r.driver ? 'class-reader driving' : 'class-reader', n);
			if (n === r.driver) s.title = n + ' drives';
			who.append(s);
		}
		const away = (r.authors || []).filter((n) => !r.readers.includes(n));
		if (away.length) who.append(el('span', 'class-authors', `wrote here: ${away.join(', ')}`));
		tr.append(cell('Readers', who));

		const j = el('td');
		j.append(el('span', r.relay ? 'class-relay on' : 'class-relay', r.relay ? 'relay attached' : r.ended ? 'closed (room ended)' : 'no relay (demo)'));
		if (r.kubelet_version) j.append(el('span', 'class-version', 'kubelet ' + r.kubelet_version));
		tr.append(cell('Journal', j));

		const f = el('td');
		const keys = Object.keys(r.fired || {});
		if (!keys.length) f.append(el('span', 'muted', 'none yet'));
		for (const k of keys.sort()) {
			const c = el('span', 'class-fired', k);
			c.dataset.fired = k;
			c.append(el('b', '', String(r.fired[k])));
			f.append(c);
		}
		tr.append(cell('Fired', f));

		const w = el('td');
		w.append(el('span', 'class-written', r.expected ? `${r.written}/${r.expected} written` : `${r.written} written`));
		w.append(el('span', 'class-checked', r.checked ? `${r.checked} checked ✓` : 'none checked yet'));
		tr.append(cell('Worksheet', w));

		const u = el('td', 'class-updated', ago(r.updated));
		u.title = new Date(r.updated).toLocaleString();
		tr.append(cell('Last activity', u));

		const end = el('td', 'class-end-cell');
		if (!r.ended) {
			const b = el('button', 'class-end-room', 'End…');
			b.type = 'button';
			b.dataset.classEndRoom = r.id;
			b.dataset.label = label.get(r.id);
			b.setAttribute('aria-label', `End ${label.get(r.id)}`);
			end.append(b);
		}
		tr.append(cell('End', end));
		tbody.append(tr);
	}
}

// GONE_AFTER_MS is the server's classes.GoneAfter.
const GONE_AFTER_MS = 3 * 60 * 1000;

// renderRoster draws the students: first who is in no room (what an
// instructor acts on), then everyone by name with their room.
function renderRoster(students, label, classEnded) {
	const ul = document.querySelector('[data-class-roster]');
	const absent = document.querySelector('[data-class-absent]');
	const count = document.querySelector('[data-class-roster-count]');
	// Gone: in no room, their class page silent for a few minutes (the
	// server's GoneAfter; told again here between the server's updates).
	const gone = (st) => !st.room && (st.gone || (!!st.seen && Date.now() - Date.parse(st.seen) > GONE_AFTER_MS));
	const out = students.filter((st) => !st.room && !gone(st));
	const nGone = students.filter(gone).length;
	const inRooms = new Set(students.filter((st) => st.room).map((st) => st.room));
	count.textContent = students.length
		? `(${students.length}: ${students.length - out.length - nGone} in ${inRooms.size} room${inRooms.size === 1 ? '' : 's'}, ${out.length} in none${nGone ? `, ${nGone} gone` : ''})`
		: '';
	absent.hidden = out.length === 0 || classEnded;
	absent.replaceChildren();
	if (out.length) {
		absent.append(el('strong', '', `In no room now (${out.length}): `));
		out.forEach((st, i) => {
			const n = el('span', 'class-absent-name', st.name);
			n.dataset.student = st.name;
			if (st.seen) n.title = `on the class page ${ago(st.seen)}`;
			absent.append(i ? ', ' : '', n);
		});
	}
	ul.replaceChildren();
	if (!students.length) {
		ul.append(el('li', 'class-empty', 'No one yet: names appear here as students give them on the class page.'));
		return;
	}
	for (const st of students) {
		const li = el('li', st.room ? 'in' : gone(st) ? 'out gone' : 'out');
		li.dataset.student = st.name;
		li.append(el('span', 'class-student-name', st.name));
		if (st.room) {
			const where = el('span', 'class-student-room', label.get(st.room) || st.room.slice(0, 6) + '…');
			if (st.driving) where.append(' · drives');
			li.dataset.room = st.room;
			li.append(where);
		} else {
			const wrote = (st.wrote || []).map((id) => label.get(id)).filter(Boolean);
			const where = gone(st) ? `gone (last seen ${ago(st.seen)})` : wrote.length ? 'no room now' : 'no room';
			li.append(el('span', 'class-student-room', wrote.length ? `${where} · wrote in ${wrote.join(', ')}` : where));
		}
		ul.append(li);
	}
}

function cell(label, td) {
	td.dataset.label = label;
	return td;
}
