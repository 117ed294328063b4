// evidence.js: what the live pane knows of the feed's record of what fired
// (GET /feeds/{feed}/fired: each case's count in the session, which the
// pane's tail cannot say), and the reader's pins of its lines: a pin keeps
// a classified line as evidence, verbatim, among the notes (notes-store.js:
// the reader's own alone, the room's in a room), and the worksheet hands
// pins in ("Fired"). The server reads a pinned line again from the feed's
// stored journal; the text here is what the reader's own copy shows.

import { clean, clock } from './logline.js';

// FiredCounts is each case's count in the feed's record of what fired.
export class FiredCounts {
	constructor() {
		this.counts = new Map();
		this.at = 0; // when the record was last asked for
	}

	// get is case key's count (0 when it never fired).
	get(key) {
		return this.counts.get(key) || 0;
	}

	// load asks url for the record, at most every 3 s unless forced, and
	// reports whether the counts were read anew.
	async load(url, force) {
		if (!force && Date.now() - this.at < 3000) return false;
		this.at = Date.now();
		let rec;
		try {
			const r = await fetch(url, { cache: 'no-store' });
			if (!r.ok) return false;
			rec = await r.json();
		} catch {
			return false; // the socket's reconnect says the server is away
		}
		this.counts = new Map(Object.entries(rec.cases || {}).map(([k, c]) => [k, Number(c.count) || 0]));
		return true;
	}
}

// Pins are the reader's pins of one feed's lines (feed names it: the feed
// the server serves the pane).
export class Pins {
	constructor(notes, feed) {
		this.notes = notes;
		this.feed = feed;
		this.ids = notes.pinned(); // note ids of this reader's own pins
	}

	// id is the note id of a pin of the feed's line seq.
	id(seq) {
		return `pin.${this.feed().replace(/[^A-Za-z0-9_-]/g, '_')}-${seq}`;
	}

	has(seq) {
		return this.ids.has(this.id(seq));
	}

	// pin pins feed message m (a classified line), as the kubelet and node
	// are known to the pane (of: {version, versionFrom, node}), by who, and
	// says how it went: {ok, text} (text for a screen reader).
	async pin(m, of, who) {
		const l = m.line;
		const id = this.id(m.seq);
		const r = await this.notes.pin(id, pinText(m, this.feed(), of), who, m.seq);
		if (r.status === 'offline') return { ok: false, text: 'Not pinned: the server did not answer' };
		if (r.status !== 'saved') return { ok: false, text: `Not pinned: ${r.error}` };
		this.ids.add(id);
		return { ok: true, text: `Pinned: ${l.case} line at ${clock(l.time) || 'no time'}` };
	}
}

// pinText is the evidence a pin keeps of message m of feed.
export function pinText(m, feed, of) {
	const l = m.line;
	let own = clean(l.text || l.raw || l.message);
	if (own.length > 4000) own = own.slice(0, 4000) + ' [cut]';
	return [
		`case: ${l.case}`,
		`time: ${l.time && !String(l.time).startsWith('0001-') ? l.time : '(none)'}`,
		`pod: ${(l.pods || []).map(clean).join(', ') || '(none)'}`,
		`node: ${clean(l.host || of.node) || '(not said)'}`,
		`kubelet: ${of.version || '(not known)'}${of.versionFrom ? ` (${of.versionFrom})` : ''}`,
		`cursor: ${clean(l.cursor) || '(none)'}`,
		`feed: ${feed}, line ${m.seq}`,
		`line: ${own}`,
	].join('\n');
}
