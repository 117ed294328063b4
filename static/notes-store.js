// notes-store.js: where the reader's notes are kept, behind one store with
// the same methods alone and in a room (TodoMVC's Store): the notes'
// editors (annotate.js) and the live pane's pins (live.js) ask it, and never
// ask where they are.
//
// Alone, the notes are kept in this browser (localStorage) and the server
// only renders, checks and hands them in (POST /k8s/{tag}/notes and
// /worksheet.md: nothing is stored there). In a room they are the room's
// (GET/PUT/DELETE /rooms/{id}/notes…), live through server-sent events;
// every write names the revision it started from, and a write that crossed
// another reader's comes back as a conflict with their version. A room's
// text not yet known to have landed is kept in this browser as a draft.
//
// A write answers {status, view, current, error}: status is 'saved' (view:
// the note as the server now has it, when it says), 'conflict' (current:
// theirs), 'gone' (the room ended or expired: its notes are read-only),
// 'busy' (try again shortly), 'offline' (the server did not answer),
// 'refused' (error says why), 'removed' or 'changed' (a delete).
//
// start(h) hands the notes to h as they come: h.rendered(views) is the
// server's rendering of this browser's own notes, all of them (alone);
// h.snapshot(views), h.note(view) and h.deleted(id) are a room's, as its
// readers write. h.gone(why, keep) says the notes are read-only: keep, while
// the server still has them (readOnly: a room ended, or watched); else they
// are gone from it.

import { announce, el, stored, store } from './dom.js';
import { colorClass } from './identity.js';

const STORE_KEY = 'syncloop-notes-v1'; // alone: every note, by id
const DRAFTS_KEY = 'syncloop-drafts-v1'; // in a room: unsaved text, by room and id

// openNotes is the page's store, one for every module of the page: the
// room's notes on a room's page, this browser's elsewhere.
let page = null;
export function openNotes(tag) {
	const roomID = document.getElementById('room')?.dataset.room || '';
	page ||= roomID ? new RoomNotes(roomID, tag) : new LocalNotes(tag);
	return page;
}

function when(iso) {
	const d = new Date(iso);
	return isNaN(d) || d.getFullYear() < 2000 ? '' : d.toLocaleString();
}

function chip(tagName, v) {
	return el(tagName, 'annot-author ' + colorClass(v.color), v.author);
}

// downloadWorksheet downloads the worksheet of notes the page holds (the
// server builds it and keeps nothing).
export async function downloadWorksheet(tag, list, name) {
	const resp = await fetch(`/k8s/${encodeURIComponent(tag)}/worksheet.md`, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ notes: list }),
	});
	if (!resp.ok) {
		const why = (await resp.json().catch(() => ({}))).error;
		announce('Could not build the worksheet: ' + (why || resp.status));
		return;
	}
	const blob = new Blob([await resp.text()], { type: 'text/markdown' });
	const a = el('a');
	a.href = URL.createObjectURL(blob);
	a.download = name;
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(a.href), 5000);
}

// --- alone: this browser's notes --------------------------------------------

class LocalNotes {
	constructor(tag) {
		this.tag = tag;
		this.words = {
			note: 'Your note',
			sheet: 'Your worksheet',
			where: 'Kept in this browser only: the server renders and checks it, and keeps nothing. It survives a reload, and you can download it.',
			download: 'Download my worksheet.md',
			author: 'me',
			pin: 'Pin to my worksheet',
		};
		this.podWorkers = `/k8s/${encodeURIComponent(tag)}/pod-workers`;
		this.renderTimer = 0;
		this.renders = 0; // renders asked for (render)
	}

	all() {
		try {
			const all = JSON.parse(stored(STORE_KEY, '{}'));
			return all && typeof all === 'object' ? all : {};
		} catch {
			return {};
		}
	}

	write(all) {
		store(STORE_KEY, JSON.stringify(all));
		this.renderSoon();
	}

	// start shows the notes kept here at once, then as the server renders
	// them; another tab of this browser writing renders them again (what
	// this tab has not saved stays in its boxes).
	start(h) {
		this.h = h;
		h.rendered(Object.values(this.all()).filter((n) => !n.id.startsWith('comment.')).map((n) => ({ ...n, rev: 0 })));
		this.render();
		window.addEventListener('storage', (ev) => {
			if (ev.key === STORE_KEY) this.render();
		});
		if (this.why) h.gone(this.why, true);
	}

	renderSoon() {
		clearTimeout(this.renderTimer);
		this.renderTimer = setTimeout(() => this.render(), 200);
	}

	// render asks the server to render the notes kept here. Its answer is
	// of the notes as they were when it asked: an answer that comes after
	// another render was asked, or after a write, is dropped (the newer
	// render shows them). Taken, it would put an older text back in a box
	// whose newer one was saved: an empty note's view, say, over what the
	// reader just wrote.
	async render() {
		if (!this.h) return;
		const seq = ++this.renders;
		const sent = JSON.stringify({ notes: Object.values(this.all()) });
		try {
			const resp = await fetch(`/k8s/${encodeURIComponent(this.tag)}/notes`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json' },
				body: sent,
			});
			if (resp.status === 429) {
				// Quiz mode's checks a minute, or the render budget: said,
				// and asked again when the server says.
				const why = (await resp.json().catch(() => ({}))).error;
				if (why) announce(why, 6000);
				clearTimeout(this.renderTimer);
				this.renderTimer = setTimeout(() => this.render(), 1000 * (Number(resp.headers.get('Retry-After')) || 6));
				return;
			}
			if (!resp.ok) return;
			const body = await resp.json();
			if (seq !== this.renders) return;
			if (JSON.stringify({ notes: Object.values(this.all()) }) !== sent) {
				this.renderSoon(); // written since without a render (a pin)
				return;
			}
			this.h.rendered(body.views || []);
		} catch {
			// the server is away: the notes are kept here regardless
		}
	}

	readOnly(why) {
		this.why = why;
		this.h?.gone(why, true);
	}
	freeze() {}
	stop() {}

	// save keeps a note's text (an empty note but a comment is forgotten).
	async save(id, text, base, who) {
		const all = this.all();
		if (text === '' && !id.startsWith('comment.')) delete all[id];
		else all[id] = { ...all[id], id, text, author: who.author, at: new Date().toISOString() };
		this.write(all);
		return { status: 'saved' };
	}

	// add keeps a new comment on lines s, with the lines quoted as they
	// are at this tag (the server quotes them).
	async add(id, text, s, who) {
		const r = await fetch(`/k8s/${encodeURIComponent(this.tag)}/quote?start=${s.lo}&end=${s.hi}`);
		if (!r.ok) return { status: 'refused', error: (await r.json().catch(() => ({}))).error || 'Could not quote those lines' };
		const quote = await r.json();
		const all = this.all();
		all[id] = { id, text, author: who.author, quote, at: new Date().toISOString() };
		this.write(all);
		return { status: 'saved' };
	}

	// edit changes a comment's text; it keeps when it was first written.
	async edit(id, text) {
		const all = this.all();
		if (!all[id]) return { status: 'saved' };
		all[id] = { ...all[id], text, created: all[id].created || all[id].at, at: new Date().toISOString() };
		this.write(all);
		return { status: 'saved' };
	}

	async remove(id) {
		const all = this.all();
		delete all[id];
		store(STORE_KEY, JSON.stringify(all));
		return { status: 'removed' };
	}

	// pin keeps a log line as evidence, a note the worksheet hands in:
	// its id names the line (feed and seq), which the server reads again
	// from the journal when it builds the worksheet; text is for this page.
	async pin(id, text, who) {
		const all = this.all();
		all[id] = { id, text, author: who.author || this.words.author, at: new Date().toISOString() };
		store(STORE_KEY, JSON.stringify(all));
		return { status: 'saved' };
	}

	// pinned are the ids of the pins kept here.
	pinned() {
		return new Set(Object.keys(this.all()).filter((id) => id.startsWith('pin.')));
	}

	keepDraft() {}
	dropDraft() {}
	draftOf() {
		return null;
	}

	// byline says where a note is kept and since when.
	byline(v) {
		const at = v.text ? when(v.at) : '';
		return at ? ['kept in this browser · ' + at] : [];
	}

	// signature is who wrote a comment, where others read it: none alone.
	signature() {
		return null;
	}

	// download is the worksheet's control: the notes kept here, built
	// into a worksheet by the server.
	download() {
		const b = el('button', 'annot-export', this.words.download);
		b.type = 'button';
		b.addEventListener('click', () => downloadWorksheet(this.tag, Object.values(this.all()), this.sheetName()));
		return b;
	}

	// sheetName is the file name of a worksheet of what the page holds.
	sheetName() {
		return `syncloop-worksheet-${this.tag}-mine.md`;
	}

	// paper asks for what a print of the notes kept here begins and ends
	// with (print.js).
	paper() {
		return fetch(`/k8s/${encodeURIComponent(this.tag)}/worksheet.json`, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ notes: Object.values(this.all()) }),
		});
	}
}

// --- in a room: the room's notes, live --------------------------------------

class RoomNotes {
	constructor(roomID, tag) {
		this.room = roomID;
		this.tag = tag;
		this.words = {
			note: 'Our note',
			sheet: "The room's worksheet",
			where: 'What you write here is shared with everyone in this room as you type, and kept with the room.',
			download: 'Download worksheet.md',
			author: 'a reader',
			pin: "Pin to the room's worksheet",
		};
		this.podWorkers = `/rooms/${roomID}/pod-workers`;
		this.events = null;
		this.frozen = false;
	}

	url(id, query) {
		return `/rooms/${this.room}/notes${id ? '/' + id : ''}?${query || 'tag=' + encodeURIComponent(this.tag)}`;
	}

	// start follows the room's notes: a snapshot on every (re)connection,
	// then each change. EventSource reconnects by itself; a 410 ends it.
	start(h) {
		const first = !this.h;
		this.h = h;
		if (first && this.why) h.gone(this.why, true);
		const events = new EventSource(`/rooms/${this.room}/notes/events?tag=${encodeURIComponent(this.tag)}`);
		this.events = events;
		events.addEventListener('snapshot', (ev) => h.snapshot(JSON.parse(ev.data).views || []));
		events.addEventListener('note', (ev) => {
			const v = JSON.parse(ev.data);
			if (v.deleted) h.deleted(v.id);
			else h.note(v);
		});
		events.addEventListener('expired', (ev) => h.gone(JSON.parse(ev.data || '{}').error));
		events.addEventListener('error', () => {
			if (events.readyState === EventSource.CLOSED && !this.frozen) {
				fetch(this.url('')).then((r) => {
					if (r.status === 410) h.gone();
					else setTimeout(() => this.start(h), 2000);
				});
			}
		});
	}

	// readOnly: the room's notes are read-only on this page (the room was
	// ended, or an instructor watches it), for why; its events go on.
	readOnly(why) {
		this.why = why;
		this.frozen = true;
		this.h?.gone(why, true);
	}

	// freeze: the page writes no more; a dropped connection is not made
	// again.
	freeze() {
		this.frozen = true;
	}

	// stop: the room's notes are gone; nothing more will come.
	stop() {
		this.events?.close();
	}

	// answer reads the server's answer to a write.
	async answer(resp, refused) {
		const body = await resp.json().catch(() => ({}));
		if (resp.ok && body.conflict && body.current) return { status: 'conflict', current: body.current, error: body.error, view: body };
		if (resp.ok) return { status: 'saved', view: body };
		if (resp.status === 410) return { status: 'gone', error: body.error };
		// 423: the room was handed in (by a partner, from another page):
		// the page turns read-only, saying when (classes/handin.go).
		if (resp.status === 423) this.readOnly(body.error);
		if (resp.status === 429 || resp.status === 503) return { status: 'busy', error: body.error || refused };
		return { status: 'refused', error: body.error || refused };
	}

	// save writes a note's text compare-and-set from revision base;
	// keepalive lets the write outlive the page (pagehide).
	async save(id, text, base, who, keepalive = false) {
		let resp;
		try {
			resp = await fetch(this.url(id), {
				method: 'PUT',
				headers: { 'Content-Type': 'application/json' },
				// No author: the server signs a room's note with its writer's name
				// in the room (their class session, or the name given there).
				body: JSON.stringify({ text, rev: base, color: who.color }),
				keepalive,
			});
		} catch {
			return { status: 'offline' };
		}
		return this.answer(resp, 'Could not save: ' + resp.status);
	}

	// put writes a comment, waiting out the write limit (a burst of saves)
	// a few times rather than failing a reader's click; null when the
	// server cannot be reached.
	async put(id, body) {
		for (let i = 0; ; i++) {
			const resp = await fetch(this.url(id), {
				method: 'PUT',
				headers: { 'Content-Type': 'application/json' },
				body: JSON.stringify(body),
			}).catch(() => null);
			if (!resp || (resp.status !== 429 && resp.status !== 503) || i === 4) return resp;
			await new Promise((r) => setTimeout(r, 1000 * (Number(resp.headers.get('Retry-After')) || 2)));
		}
	}

	async add(id, text, s, who) {
		const resp = await this.put(id, { text, rev: 0, color: who.color, quote: { tag: this.tag, start: s.lo, end: s.hi } });
		return resp ? this.answer(resp, 'Could not add the comment') : { status: 'offline' };
	}

	async edit(id, text, rev, who) {
		const resp = await this.put(id, { text, rev, color: who.color });
		return resp ? this.answer(resp, 'Could not save the comment') : { status: 'offline' };
	}

	// remove deletes a comment at revision rev; the room's event removes
	// it from every page.
	async remove(id, rev) {
		const resp = await fetch(this.url(id, 'rev=' + rev), { method: 'DELETE' });
		if (resp.status === 410) return { status: 'gone' };
		if (resp.ok && resp.status !== 204) return { status: 'changed' };
		return { status: resp.ok ? 'removed' : 'refused' };
	}

	// pin pins line seq of the room's journal, once (a pin already there
	// is the same pin): the server quotes the line from the journal, and
	// refuses (422, with why) one that is not a fired case's.
	async pin(id, text, who, seq) {
		let resp;
		try {
			resp = await fetch(`/rooms/${this.room}/pins`, {
				method: 'POST',
				headers: { 'Content-Type': 'application/json' },
				body: JSON.stringify({ seq, author: who.author || this.words.author, color: who.color }),
			});
		} catch {
			return { status: 'offline' };
		}
		if (!resp.ok) return { status: 'refused', error: (await resp.json().catch(() => ({}))).error || String(resp.status) };
		return { status: 'saved' };
	}

	// pinned: the room's pins are known from its notes, not from here.
	pinned() {
		return new Set();
	}

	// paper asks for what a print of the room's notes begins and ends
	// with (print.js).
	paper() {
		return fetch(`/rooms/${this.room}/worksheet.json?tag=${encodeURIComponent(this.tag)}`, { cache: 'no-store' });
	}

	// drafts: a room's unsaved text, kept in this browser until it is
	// saved. The tab may close before a write lands (or while a merge
	// waits): the text is then still here when the reader comes back.
	drafts() {
		try {
			const all = JSON.parse(stored(DRAFTS_KEY, '{}'));
			return all && typeof all === 'object' ? all : {};
		} catch {
			return {};
		}
	}

	setDraft(id, text, base) {
		const all = this.drafts();
		const week = Date.now() - 7 * 864e5;
		for (const [r, ds] of Object.entries(all)) {
			for (const [k, d] of Object.entries(ds)) if (!(d.at > week)) delete ds[k];
			if (!Object.keys(ds).length) delete all[r];
		}
		const mine = (all[this.room] ||= {});
		if (text === null) delete mine[id];
		else mine[id] = { text, base, at: Date.now() };
		if (!Object.keys(mine).length) delete all[this.room];
		store(DRAFTS_KEY, JSON.stringify(all));
	}

	keepDraft(id, text, base) {
		this.setDraft(id, text, base);
	}

	dropDraft(id) {
		this.setDraft(id, null);
	}

	draftOf(id) {
		return this.drafts()[this.room]?.[id] || null;
	}

	// byline says who changed a note last, when, and what it said before.
	byline(v) {
		if (!v.author || !v.text) return [];
		const out = ['last changed by ', chip('span', v)];
		const at = when(v.at);
		if (at) out.push(' · ' + at);
		if (v.prev) {
			const d = el('details', 'annot-prev');
			const s = el('summary', '', 'previous text');
			const pre = el('pre', 'annot-prev-text', v.prev.text || '(empty)');
			d.append(s, el('span', 'annot-prev-by', 'by ' + (v.prev.author || 'someone')), pre);
			out.push(' · ', d);
		}
		return out;
	}

	// signature is who wrote a comment, for the others in the room.
	signature(v) {
		return v.author ? chip('span', v) : null;
	}

	// download is the worksheet's control: the room's, as the server keeps it.
	download() {
		const a = el('a', 'button annot-export', this.words.download);
		a.href = `/rooms/${this.room}/worksheet.md?tag=${encodeURIComponent(this.tag)}`;
		a.download = '';
		return a;
	}

	// sheetName is the file name of a worksheet of what the page holds,
	// once the room's own is gone.
	sheetName() {
		return `syncloop-worksheet-${this.tag}-room-${this.room.slice(0, 6)}.md`;
	}
}
