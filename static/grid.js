// grid.js: the instructor's grid on a class's page (server/classes,
// progress.go): a row per room, a column per worksheet item, each cell
// [data-cell="ROOM:ITEM"] with its data-state (empty, written, warned,
// confirmed; a warning's reason on hover and on focus), then the room's
// pins, the exercise's checks from its journal and its last activity; its
// flags (no relay yet, idle, -v below 4, ended) beside its name. Built from GET /classes/{id}/progress.json (the key in a
// header), read again whenever the class's overview changes and every few
// seconds (the lab checks). Sortable by progress and by activity. Under
// 600 px a row collapses to a summary (class.css). Everything the server
// sends reaches the page as text.

import { el } from './dom.js';

const marks = { empty: '–', written: '✎', warned: '⚠', confirmed: '✓' };
const states = { empty: 'empty', written: 'written', warned: 'the checker warns', confirmed: 'the checker confirms' };
const labs = [
	['added', 'added'],
	['liveness_failed', 'liveness failed'],
	['deleted', 'deleted'],
	['verbosity', '-v=4'],
];

// startGrid draws the grid of class classID with the instructor's auth
// headers; it returns { refresh } for the overview's events.
export function startGrid(classID, auth) {
	const table = document.querySelector('[data-grid]');
	if (!table) return { refresh() {} };
	const said = document.querySelector('[data-grid-said]');
	let sortBy = 'n';
	let shown = null;
	const open = new Set(); // the rooms shown a row per student beneath
	let inFlight = false;
	let again = false;

	async function refresh() {
		if (inFlight) {
			again = true;
			return;
		}
		inFlight = true;
		try {
			const r = await fetch(`/classes/${classID}/progress.json`, { headers: auth, cache: 'no-store' });
			const j = await r.json().catch(() => ({}));
			if (!r.ok) throw new Error(j.error || r.statusText);
			shown = j;
			draw(table, shown, sortBy, open);
			said.textContent = '';
		} catch (err) {
			said.textContent = `Progress not read (${err.message}); trying again.`;
		} finally {
			inFlight = false;
			if (again) {
				again = false;
				refresh();
			}
		}
	}
	for (const b of document.querySelectorAll('[data-grid-sort]')) {
		b.addEventListener('click', () => {
			sortBy = b.dataset.gridSort;
			for (const o of document.querySelectorAll('[data-grid-sort]')) o.setAttribute('aria-pressed', String(o === b));
			if (shown) draw(table, shown, sortBy, open);
		});
	}
	document.querySelector('[data-grid-grades]')?.addEventListener('click', async (ev) => {
		const b = ev.currentTarget;
		b.disabled = true;
		try {
			const r = await fetch(`/classes/${classID}/grades.csv`, { headers: auth, cache: 'no-store' });
			if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
			const url = URL.createObjectURL(await r.blob());
			const a = el('a');
			a.href = url;
			a.download = `syncloop-grades-${classID.slice(0, 6).toLowerCase()}.csv`;
			document.body.append(a);
			a.click();
			a.remove();
			setTimeout(() => URL.revokeObjectURL(url), 10000);
		} catch (err) {
			said.textContent = 'Could not download the grades: ' + err.message;
		} finally {
			b.disabled = false;
		}
	});
	table.addEventListener('click', (ev) => {
		const b = ev.target.closest('[data-grid-item]');
		if (b) showAnswers(classID, auth, b.dataset.gridItem);
		const st = ev.target.closest('[data-grid-students]');
		if (st && shown) {
			const id = st.dataset.gridStudents;
			if (!open.delete(id)) open.add(id);
			draw(table, shown, sortBy, open);
			table.querySelector(`[data-grid-students="${CSS.escape(id)}"]`)?.focus();
		}
		const ex = ev.target.closest('[data-grid-extend]');
		if (ex && shown) extend(ex);
		const re = ev.target.closest('[data-grid-reopen]');
		if (re && confirm('Reopen this room? Its readers can change its notes again, and its hand-in is its live worksheet until they hand it in again.')) reopen(re);
	});
	// extend gives one room more time past the class's due time: the
	// settings' extensions, a room's minutes, replace the whole map, so the
	// others are sent as they are (classes/handin.go).
	async function extend(b) {
		const room = b.dataset.gridExtend;
		const now = shown.class?.extensions || {};
		const asked = prompt(`Minutes of extension for ${b.dataset.gridLabel} (0 for none):`, String(now[room] || 30));
		if (asked === null) return;
		const minutes = Number(asked.trim());
		if (!Number.isInteger(minutes) || minutes < 0) {
			said.textContent = `An extension is a whole number of minutes, not “${asked}”.`;
			return;
		}
		b.disabled = true;
		try {
			const body = { extensions: { ...now, [room]: minutes } };
			const r = await fetch(`/classes/${classID}/settings`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
			if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
			said.textContent = minutes ? `${b.dataset.gridLabel} has ${minutes} minutes more.` : `${b.dataset.gridLabel} has no extension.`;
			refresh();
		} catch (err) {
			said.textContent = 'Could not set the extension: ' + err.message;
		} finally {
			b.disabled = false;
		}
	}
	// reopen: a room handed in takes writes again (classes/handin.go).
	async function reopen(b) {
		b.disabled = true;
		try {
			const r = await fetch(`/classes/${classID}/rooms/${encodeURIComponent(b.dataset.gridReopen)}/reopen`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{}' });
			if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
			said.textContent = 'Reopened.';
			refresh();
		} catch (err) {
			said.textContent = 'Could not reopen the room: ' + err.message;
			b.disabled = false;
		}
	}
	document.querySelector('[data-grid-answers-close]')?.addEventListener('click', () => {
		document.querySelector('[data-grid-answers]').hidden = true;
	});
	refresh();
	setInterval(() => document.visibilityState === 'visible' && refresh(), 5000);
	return { refresh };
}

// progress is how far a room is: confirmed answers count most, then the
// others written, then the lab checks passed.
function progress(r) {
	return r.confirmed * 2 + (r.written - r.warned - r.confirmed) * 2 + r.warned + labDone(r) * 2;
}

function labDone(r) {
	return labs.filter(([k]) => r.checks?.[k]?.ok).length;
}

function sorted(rooms, by) {
	const out = [...rooms];
	if (by === 'progress') out.sort((a, b) => progress(a) - progress(b) || a.n - b.n);
	if (by === 'activity') out.sort((a, b) => new Date(a.updated) - new Date(b.updated) || a.n - b.n);
	return out;
}

// draw renders p, its rooms in the order by, a row per student beneath
// each room of open.
function draw(table, p, by, open) {
	const items = p.items || [];
	const rooms = sorted(p.rooms || [], by);
	document.querySelector('[data-grid-count]').textContent = rooms.length ? `(${rooms.length} room${rooms.length === 1 ? '' : 's'}, ${items.length} items)` : '';
	const pod = document.querySelector('[data-grid-pod]');
	if (pod) pod.textContent = p.class?.pod || 'probe-me';
	table.tHead.replaceChildren(...head(items));
	const body = table.tBodies[0];
	body.replaceChildren();
	if (!rooms.length) {
		const tr = el('tr');
		const td = el('td', 'class-empty', 'No room yet.');
		td.colSpan = items.length + 4;
		tr.append(td);
		body.append(tr);
		return;
	}
	const due = Boolean(p.class?.due);
	for (const r of rooms) {
		body.append(row(r, items, open.has(r.id), due ? p.class.extensions?.[r.id] || 0 : null));
		if (open.has(r.id)) for (const name of r.students || []) body.append(studentRow(r, name, items));
	}
}

// studentRow is what one reader of room r wrote: each item they were the
// last to write, in its room's state; the rest empty.
function studentRow(r, name, items) {
	const tr = el('tr', 'grid-student');
	tr.dataset.gridStudent = `${r.id}:${name}`;
	const th = el('th', 'grid-room grid-student-name');
	th.scope = 'row';
	const mine = items.filter((it) => r.by?.[it.id] === name);
	th.append(el('span', '', name), el('span', 'grid-summary', `wrote ${mine.length} of ${items.length}`));
	tr.append(th);
	for (const it of items) {
		const state = r.by?.[it.id] === name ? r.cells?.[it.id] || 'empty' : 'empty';
		const td = el('td', 'grid-cell', marks[state] || '?');
		td.dataset.studentCell = `${r.id}:${name}:${it.id}`;
		td.dataset.state = state;
		const text = `${name}, ${it.label}: ${state === 'empty' ? 'not written by them' : states[state] || state}`;
		td.title = text;
		td.setAttribute('aria-label', text);
		tr.append(td);
	}
	const rest = el('td', 'grid-student-n', `wrote ${mine.length} of ${items.length}`);
	rest.colSpan = 3;
	tr.append(rest);
	return tr;
}

// head is the two header rows: the cases (each its note, writer and
// exercise), then the items of their own; and one column an item.
function head(items) {
	const groups = el('tr', 'grid-groups');
	const cols = el('tr', 'grid-cols');
	const room = el('th', 'grid-room-h', 'Room');
	room.scope = 'col';
	room.rowSpan = 2;
	groups.append(room);
	const sub = { case: 'note', writer: 'wr.', exercise: 'ex.', vmphase: 'dir.' }; // vmphase: a volume class's phase (classes/volume.go)
	const byCase = new Map();
	for (const it of items) {
		if (it.case) {
			if (!byCase.has(it.case)) byCase.set(it.case, []);
			byCase.get(it.case).push(it);
		}
	}
	for (const [key, its] of byCase) {
		const th = el('th', 'grid-case-h', key);
		th.scope = 'colgroup';
		th.colSpan = its.length;
		groups.append(th);
		for (const it of its) cols.append(colHead(it, sub[it.kind] || it.kind));
	}
	const rest = items.filter((it) => !it.case);
	if (rest.length) {
		const th = el('th', 'grid-case-h', 'the rest');
		th.scope = 'colgroup';
		th.colSpan = rest.length;
		groups.append(th);
		for (const it of rest) cols.append(colHead(it, it.label));
	}
	for (const name of ['Pins', 'Lab', 'Activity']) {
		const th = el('th', 'grid-side-h', name);
		th.scope = 'col';
		th.rowSpan = 2;
		groups.append(th);
	}
	return [groups, cols];
}

function colHead(it, text) {
	const th = el('th', 'grid-item-h');
	th.scope = 'col';
	th.dataset.item = it.id;
	const b = el('button', 'grid-item-b', text);
	b.type = 'button';
	b.dataset.gridItem = it.id;
	b.title = `${it.label}: every room's answer`;
	b.setAttribute('aria-label', `${text} (${it.label}): every room's answer`);
	th.append(b);
	return th;
}

// showAnswers shows one item across every room, side by side, with who
// wrote each answer (GET /classes/{id}/items/{item}.json).
async function showAnswers(classID, auth, id) {
	const box = document.querySelector('[data-grid-answers]');
	const h = box.querySelector('[data-grid-answers-h]');
	const list = box.querySelector('[data-grid-answers-list]');
	box.hidden = false;
	h.textContent = 'Loading…';
	list.replaceChildren();
	try {
		const r = await fetch(`/classes/${classID}/items/${encodeURIComponent(id)}.json`, { headers: auth, cache: 'no-store' });
		const j = await r.json().catch(() => ({}));
		if (!r.ok) throw new Error(j.error || r.statusText);
		h.textContent = `${j.item.label}: every room`;
		for (const a of j.answers) {
			const li = el('li', 'class-answer');
			li.dataset.answerRoom = a.room;
			li.dataset.state = a.state;
			const head = el('p', 'class-answer-h');
			head.append(el('strong', '', `Room ${a.n}`), ` ${marks[a.state] || ''} ${states[a.state] || a.state}`);
			if (a.by) head.append(` · by ${a.by}`);
			li.append(head);
			li.append(a.text ? el('p', 'class-answer-text', a.text) : el('p', 'class-answer-text muted', 'no answer yet'));
			for (const w of a.warnings || []) li.append(el('p', 'class-answer-warn', '⚠ ' + w));
			list.append(li);
		}
		box.scrollIntoView({ block: 'nearest' });
	} catch (err) {
		h.textContent = `Could not read the answers: ${err.message}`;
	}
}

// row is one room.
// extra is the room's extension in minutes when the class has a due time,
// null when it has none.
function row(r, items, studentsShown, extra) {
	const label = `Room ${r.n}`;
	const tr = el('tr', r.ended ? 'ended' : '');
	tr.dataset.gridRoom = r.id;
	const th = el('th', 'grid-room');
	th.scope = 'row';
	const a = el('a', '', label);
	a.href = `/rooms/${encodeURIComponent(r.id)}?ro=1`;
	a.target = '_blank';
	a.rel = 'noopener';
	th.append(a);
	const who = (r.students || []).join(', ');
	if (who) {
		th.append(el('span', 'grid-who', who));
		const text = studentsShown ? 'hide students' : 'by student';
		const b = el('button', 'grid-students', text);
		b.type = 'button';
		b.dataset.gridStudents = r.id;
		b.setAttribute('aria-expanded', String(studentsShown));
		// The name a screen reader says begins with the text shown.
		b.setAttribute('aria-label', `${text}: ${label}, a row per student, what each wrote`);
		th.append(b);
	}
	for (const f of r.flags || []) th.append(el('span', 'grid-flag', f));
	if (r.handed_in) {
		const t = new Date(r.handed_in);
		const hi = el('span', 'grid-flag grid-handedin', `handed in ${String(t.getHours()).padStart(2, '0')}:${String(t.getMinutes()).padStart(2, '0')}${r.late ? ' · late' : ''}`);
		hi.dataset.gridHandedIn = r.late ? 'late' : 'on time';
		hi.title = t.toLocaleString();
		const re = el('button', 'grid-reopen', 'Reopen');
		re.type = 'button';
		re.dataset.gridReopen = r.id;
		th.append(hi, re);
	}
	if (extra !== null && !r.ended) {
		const text = extra ? `+${extra} min · extend…` : 'extend…';
		const b = el('button', 'grid-students', text);
		b.type = 'button';
		b.dataset.gridExtend = r.id;
		b.dataset.gridLabel = label;
		b.setAttribute('aria-label', `${text} ${label}: minutes past the due time`);
		th.append(b);
	}
	th.append(summary(r));
	tr.append(th);
	for (const it of items) tr.append(cell(r, it, label));
	const pins = el('td', 'grid-pins');
	const keys = Object.keys(r.pins || {}).sort();
	if (!keys.length) pins.append(el('span', 'muted', '–'));
	for (const k of keys) pins.append(el('span', 'grid-pin', `${k} ${r.pins[k]}`));
	tr.append(pins);
	tr.append(lab(r));
	const act = el('td', 'grid-activity', ago(r.updated));
	act.title = new Date(r.updated).toLocaleString();
	tr.append(act);
	return tr;
}

// cell is one item of one room.
function cell(r, it, label) {
	const state = r.cells?.[it.id] || 'empty';
	const td = el('td', 'grid-cell', marks[state] || '?');
	td.dataset.cell = `${r.id}:${it.id}`;
	td.dataset.state = state;
	let text = `${label}, ${it.label}: ${states[state] || state}`;
	if (r.by?.[it.id]) text += `, by ${r.by[it.id]}`;
	const why = (r.warnings?.[it.id] || []).join(' ');
	if (why) {
		text += `: ${why}`;
		td.dataset.reason = why;
		td.tabIndex = 0; // the reason on focus, not only on hover
	}
	td.title = text;
	td.setAttribute('aria-label', text);
	return td;
}

// lab is the exercise's four checks, each ✓ with its line, or not yet.
function lab(r) {
	const td = el('td', 'grid-lab');
	for (const [k, name] of labs) {
		const c = r.checks?.[k] || { ok: false, text: 'not yet' };
		const mark = c.ok && c.at?.link ? el('a', 'grid-check ok', '✓') : el('span', c.ok ? 'grid-check ok' : 'grid-check', c.ok ? '✓' : '·');
		if (mark.tagName === 'A') {
			mark.href = c.at.link;
			mark.target = '_blank';
			mark.rel = 'noopener';
		}
		mark.dataset.check = k;
		let text = `${name}: ${c.text}`;
		if (c.at) text += ` (line ${c.at.seq}${c.at.time ? ', ' + new Date(c.at.time).toLocaleTimeString() : ''}): ${c.at.line}`;
		mark.title = text;
		mark.setAttribute('aria-label', text);
		td.append(mark);
	}
	td.append(el('span', 'grid-lab-n', ` ${labDone(r)}/4`));
	return td;
}

// summary is the row as a narrow window shows it (class.css shows it,
// and hides the cells, under 600 px).
function summary(r) {
	const s = el('span', 'grid-summary');
	s.dataset.gridSummary = r.id;
	const parts = [`${r.written}/${r.expected} written`];
	if (r.warned) parts.push(`${r.warned} ⚠`);
	parts.push(r.confirmed ? `${r.confirmed} ✓` : 'none confirmed');
	parts.push(`lab ${labDone(r)}/4`);
	const pins = Object.values(r.pins || {}).reduce((a, b) => a + b, 0);
	if (pins) parts.push(`${pins} pinned`);
	parts.push(ago(r.updated));
	s.textContent = parts.join(' · ');
	return s;
}

function ago(t) {
	const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
	if (s < 60) return `${s} s ago`;
	if (s < 3600) return `${Math.round(s / 60)} min ago`;
	return `${Math.round(s / 3600)} h ago`;
}
