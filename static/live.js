// live.js: the live pane. It streams a feed's classified kubelet log lines
// from /feeds/{feed}/ws (history first, then the tail) into #live, beside the
// source (on narrower windows, in a drawer over it): time, case chip, pods,
// message.
//
// It reads and writes the page's one selection (selection.js): a selected
// case's lines are highlighted and the others recede (or, filtered, go); its
// newest line is brought into view and the reader steps through its lines
// ("3 of 12"). Clicking a log line, or Enter on it, selects its case and its
// source line. Every count says what the pane holds and shows.
//
// The pane follows the tail only while the reader is at its bottom: any
// scroll away (wheel, scrollbar, keys, stepping to a line) pauses it, and
// "N new ↓ resume" brings it back.
//
// Case colours come from the page (data-cases: each case's key and hue, from
// the server's one list of case keys), never from a list spelled here.
//
// Log text is untrusted: it only ever reaches the page through textContent.

import { announce, el, lineEl } from './dom.js';
import { FiredCounts, Pins } from './evidence.js';
import { Timing } from './timing.js';
import { body, clean, clock, jsonLines, versionLink, versionSource } from './logline.js';
import { readerColor, readerName } from './identity.js';
import { openNotes } from './notes-store.js';
import { FEED_GONE, ROOM_GONE } from './codes.js';
import { Socket } from './socket.js';
import { onSelect, select } from './selection.js';

const MAX_LINES = 2000; // lines kept in the pane (and while paused)
const SHOW_CHARS = 2000; // characters of a message shown before a cut marker
const AT_BOTTOM = 8; // px from the bottom that still count as at the bottom
const RENDER_EVERY = 100; // ms between two updates of the list at most
const drawerMode = window.matchMedia('(max-width: 1199.98px)');

class LivePane {
	constructor(root) {
		this.root = root;
		this.feed = root.dataset.feed || 'default';
		this.tag = root.dataset.tag || '';
		// byPart: the pane reads lines by the volume reading's parts
		// (data-reading="volume-manager"), not by the loop's cases.
		this.byPart = root.dataset.reading === 'volume-manager';
		let cases = [];
		try {
			cases = JSON.parse(root.dataset.cases || '[]');
		} catch {
			cases = [];
		}
		// hue: the colour slot the server gave each case key.
		this.hue = new Map(cases.map((c) => [c.key, c.hue]));
		this.lastSeq = 0;
		this.served = ''; // the feed the server gave (hello.feed): lastSeq counts in it
		this.version = '';
		this.versionTag = ''; // the tag the kubelet's version reads at (server's)
		this.node = ''; // the journal's host, as its lines say
		this.fired = new FiredCounts(); // each case's count in the session (GET /feeds/{feed}/fired)
		this.lineOf = new WeakMap(); // li → the line message it shows
		this.notes = openNotes(this.tag); // where a pin is kept: a note, which the worksheet hands in
		this.pins = new Pins(this.notes, () => this.served || this.feed); // this reader's pins of the feed's lines
		this.selected = '';
		this.curSeq = 0; // the log line the reader stepped to, or clicked
		this.paused = false;
		this.pausedByScroll = false;
		this.held = []; // lines that arrived while paused (the last MAX_LINES)
		this.heldCount = 0; // all of them, for "142 new"
		this.incoming = []; // lines waiting for the next update (schedule)
		this.frame = 0; // the render scheduled (a timer's or a frame's id)
		this.lastRender = -Infinity;
		this.hideNoneSet = false; // the reader chose, the demo default no longer applies
		// The pane's own scrolls are told from the reader's by where they
		// land (ownTop), not by timing: a scroll event may come frames later.
		this.ownTop = -1;
		this.lastTop = 0;
		// holdCur: the line the reader stepped to is kept in view (while
		// lines arrive, the drawer opens, a filter or the window changes)
		// until the reader scrolls it away.
		this.holdCur = false;
		this.build();
		this.listen();
		this.connect();
	}

	build() {
		const r = this.root;
		r.classList.add('live-pane');
		const head = el('header', 'live-head');
		this.toggle = el('button', 'live-toggle');
		this.toggle.type = 'button';
		this.toggle.setAttribute('aria-expanded', 'false');
		this.toggle.setAttribute('aria-controls', 'live-body');
		this.toggle.append(el('span', 'live-title', 'Live journal'), el('span', 'live-toggle-mark', ''));
		head.append(el('h2', 'live-h', ''));
		head.firstChild.append(this.toggle);
		this.conn = el('span', 'live-conn', 'connecting…');
		this.conn.setAttribute('role', 'status');
		// Where the time goes: a word in the head, its panel over the lines
		// when asked, so that it costs the lines no room (timing.js).
		this.timing = new Timing(() => this.feedURL('/timing'));
		head.append(this.timing.el, this.conn);
		r.append(head);

		const body = el('div', 'live-body');
		body.id = 'live-body';
		this.body = body;
		this.banner = el('span', 'live-banner');
		this.banner.hidden = true;
		head.insertBefore(this.banner, this.conn);
		this.versionNote = el('p', 'live-version');
		this.versionNote.hidden = true;
		this.note = el('p', 'live-note');
		this.note.hidden = true;
		body.append(this.versionNote, this.note);

		const bar = el('div', 'live-bar');
		this.pauseBtn = el('button', 'live-pause', 'Pause');
		this.pauseBtn.type = 'button';
		this.pauseBtn.title = 'Freeze the view; lines keep arriving and are counted';
		this.unit = this.byPart ? 'phase' : 'case'; // what a line's key is called
		this.filterBtn = el('button', 'live-filter', `Only this ${this.unit}`);
		this.filterBtn.type = 'button';
		this.filterBtn.disabled = true;
		this.filterBtn.setAttribute('aria-pressed', 'false');
		const noneLabel = el('label', 'live-none');
		this.noneBox = el('input');
		this.noneBox.type = 'checkbox';
		this.noneBox.dataset.hideNone = '';
		// On a phone the label is short (the long one is display:none there,
		// so it is not read either).
		noneLabel.append(this.noneBox, el('span', 'live-long', ` hide lines without a ${this.unit}`), el('span', 'live-short', ` hide no-${this.unit}`));
		this.pod = el('input', 'live-pod');
		this.pod.id = 'live-pod';
		this.pod.type = 'search';
		this.pod.placeholder = 'pod filter, e.g. probe-me';
		this.pod.setAttribute('aria-label', 'Show only lines naming this pod');
		// On a phone the pod filter folds behind a button, so that the
		// drawer's controls are one row and its lines have the room.
		this.podBtn = el('button', 'live-pod-btn', 'Pod…');
		this.podBtn.type = 'button';
		this.podBtn.title = 'Show only lines naming a pod';
		this.podBtn.setAttribute('aria-controls', 'live-pod');
		this.podBtn.setAttribute('aria-expanded', 'false');
		bar.append(this.pauseBtn, this.filterBtn, noneLabel, this.podBtn, this.pod);
		body.append(bar);

		// The selected case: how many of its lines the pane shows, which one
		// is in view, and steps between them.
		this.selBar = el('div', 'live-sel');
		this.selBar.hidden = true;
		this.selInfo = el('span', 'live-sel-info');
		this.selInfo.setAttribute('aria-live', 'polite');
		this.prevBtn = el('button', 'live-prev', '‹ previous');
		this.prevBtn.type = 'button';
		this.prevBtn.title = 'The previous line of this case';
		this.nextBtn = el('button', 'live-next', 'next ›');
		this.nextBtn.type = 'button';
		this.nextBtn.title = 'The next line of this case';
		this.selBar.append(this.selInfo, this.prevBtn, this.nextBtn);
		body.append(this.selBar);

		const wrap = el('div', 'live-scroll');
		this.list = el('ol', 'live-lines');
		this.list.setAttribute('aria-live', 'off');
		this.list.setAttribute('aria-label', 'Log lines, newest last; arrow keys move between lines, Enter shows a line\'s case');
		this.list.tabIndex = 0;
		this.more = el('button', 'live-more');
		this.more.type = 'button';
		this.more.hidden = true;
		wrap.append(this.list, this.more);
		body.append(wrap);
		r.append(body);
		this.setOpen(false);
	}

	// setOpen opens or closes the drawer (windows narrower than 1200px;
	// wider, the pane is a column and always open).
	setOpen(on) {
		this.open = on;
		this.root.classList.toggle('open', on);
		this.toggle.setAttribute('aria-expanded', String(on || !drawerMode.matches));
		this.toggle.lastChild.textContent = on ? ' ▾ hide' : ' ▴ show';
		document.body.classList.toggle('live-open', on);
		if (on) this.keep();
	}

	listen() {
		this.toggle.addEventListener('click', () => {
			if (drawerMode.matches) this.setOpen(!this.open);
		});
		drawerMode.addEventListener('change', () => this.setOpen(this.open));
		// The header's "live journal" link opens the drawer.
		document.querySelector('a.to-live')?.addEventListener('click', (ev) => {
			if (!drawerMode.matches) return;
			ev.preventDefault();
			this.setOpen(true);
			this.list.focus();
		});
		this.pauseBtn.addEventListener('click', () => (this.paused ? this.resume() : this.pause(false)));
		this.more.addEventListener('click', () => this.resume());
		this.filterBtn.addEventListener('click', () => {
			const on = !this.root.classList.contains('filter-case');
			this.root.classList.toggle('filter-case', on);
			this.filterBtn.setAttribute('aria-pressed', String(on));
			this.refresh();
			this.keep();
		});
		this.noneBox.addEventListener('change', () => {
			this.hideNoneSet = true;
			this.setHideNone(this.noneBox.checked);
		});
		this.pod.addEventListener('input', () => {
			this.applyPodFilter();
			this.keep();
		});
		this.podBtn.addEventListener('click', () => {
			const on = !this.root.classList.contains('pod-open');
			this.root.classList.toggle('pod-open', on);
			this.podBtn.setAttribute('aria-expanded', String(on));
			if (on) this.pod.focus();
		});
		this.prevBtn.addEventListener('click', () => this.step(-1));
		this.nextBtn.addEventListener('click', () => this.step(1));
		// Any scroll of the reader's away from the bottom pauses: the wheel,
		// the scrollbar, keys. The pane's own scrolls (following, showing a
		// stepped-to line) never pause or resume it. Scrolled back down to
		// the bottom, a pause the scrolling made ends: landing there by a
		// step to the newest line, or staying there, does not.
		this.list.addEventListener('scroll', () => {
			const l = this.list;
			const top = l.scrollTop;
			const mine = this.ownTop >= 0 && Math.abs(top - this.ownTop) < 2;
			const down = top > this.lastTop + 1;
			this.ownTop = -1;
			this.lastTop = top;
			if (l.clientHeight === 0) return;
			if (mine) {
				// The pane showed a line above the tail (arrow keys): it holds.
				if (!this.paused && !this.atBottom()) this.pause(true);
				return;
			}
			if (this.holdCur) this.holdCur = this.curInView();
			if (this.atBottom()) {
				if (this.paused && this.pausedByScroll && down) this.resume();
			} else if (!this.paused) {
				this.pause(true);
			}
		}, { passive: true });
		// The list's box changes (the drawer opens, the window or the bars
		// above it change): the tail or the stepped-to line stays in view.
		new ResizeObserver(() => this.keep()).observe(this.list);
		this.list.addEventListener('click', (ev) => {
			const pin = ev.target.closest('[data-pin]');
			if (pin) {
				this.pin(pin.closest('li.ll'), pin);
				return;
			}
			const li = ev.target.closest('li.ll');
			if (li) this.jump(li);
		});
		this.list.addEventListener('keydown', (ev) => this.key(ev));
		onSelect((s, how) => this.select(s, how));
	}

	atBottom() {
		const l = this.list;
		return l.scrollHeight - l.scrollTop - l.clientHeight < AT_BOTTOM;
	}

	toBottom() {
		this.scrollListTo(this.list.scrollHeight);
	}

	// scrollListTo scrolls the list (never the page), as the pane's own move.
	scrollListTo(top) {
		const l = this.list;
		const before = l.scrollTop;
		l.scrollTop = Math.max(0, top);
		if (Math.abs(l.scrollTop - before) >= 1) this.ownTop = l.scrollTop;
		this.lastTop = l.scrollTop;
	}

	// keep puts back what the reader was looking at after the pane's layout
	// changed: the tail when following, else the stepped-to line.
	keep() {
		if (!this.list.clientHeight) return;
		if (!this.paused) {
			this.toBottom();
			return;
		}
		const li = this.holdCur && this.curLine();
		if (li && this.shown(li)) this.bringIntoView(li);
	}

	curLine() {
		return this.curSeq ? this.list.querySelector(`li.ll[data-seq="${this.curSeq}"]`) : null;
	}

	// visibleBox is the part of the list a reader sees: inside the list's
	// box, inside the window (a column taller than the window, the drawer),
	// above the "N new ↓ resume" button that floats over its bottom.
	visibleBox() {
		const l = this.list;
		const b = l.getBoundingClientRect();
		const top = Math.max(b.top + l.clientTop, 0);
		let bottom = Math.min(b.top + l.clientTop + l.clientHeight, window.innerHeight);
		if (!this.more.hidden) bottom = Math.min(bottom, this.more.getBoundingClientRect().top - 4);
		return { top, bottom };
	}

	// curInView says whether any of the stepped-to line is on view.
	curInView() {
		const li = this.curLine();
		if (!li || !this.shown(li)) return false;
		const r = li.getBoundingClientRect();
		const v = this.visibleBox();
		return r.bottom > v.top && r.top < v.bottom;
	}

	// jump selects a log line's case and its source line, when it has them.
	jump(li) {
		if (!li.dataset.case) return;
		if (!this.hue.has(li.dataset.case)) {
			announce(`${li.dataset.case}: no such case at ${this.tag}`);
			return;
		}
		const line = Number(li.dataset.line || 0);
		this.curSeq = Number(li.dataset.seq);
		if (this.byPart) {
			// The second reading's phases are its sections (#part-{phase}):
			// the line's lines stand out, and its phase comes into view.
			select({ key: li.dataset.case, lo: 0, seq: this.curSeq }, { from: 'pane' });
			document.getElementById('part-' + li.dataset.case)?.scrollIntoView({ block: 'start' });
			return;
		}
		select({ key: li.dataset.case, lo: line, seq: this.curSeq }, { from: 'pane', scroll: true, url: 'push' });
	}

	// key moves between shown lines with the arrows and jumps with Enter.
	key(ev) {
		const lines = this.shownLines();
		if (!lines.length) return;
		const at = ev.target.closest?.('li.ll');
		let i = at ? lines.indexOf(at) : -1;
		switch (ev.key) {
			case 'ArrowDown':
				i = i < 0 ? lines.length - 1 : Math.min(lines.length - 1, i + 1);
				break;
			case 'ArrowUp':
				i = i < 0 ? lines.length - 1 : Math.max(0, i - 1);
				break;
			case 'Home':
				if (!at) return;
				i = 0;
				break;
			case 'End':
				if (!at) return;
				i = lines.length - 1;
				break;
			case 'Enter':
				if (at) this.jump(at);
				ev.preventDefault();
				return;
			default:
				return;
		}
		ev.preventDefault();
		for (const li of this.list.querySelectorAll('li.ll[tabindex="0"]')) li.tabIndex = -1;
		lines[i].tabIndex = 0;
		lines[i].focus({ preventScroll: true });
		this.bringIntoView(lines[i]);
	}

	// connect opens the feed's socket (socket.js), which comes back after a
	// close, resuming after the last line seen.
	connect() {
		this.sock = new Socket(() => this.socketPath(), {
			min: 500,
			max: 15000,
			message: (data) => {
				const at = performance.timeOrigin + performance.now();
				const msgs = [...jsonLines(data)];
				for (const m of msgs) this.handle(m);
				this.timing.message(msgs, Math.round(at * 1000));
			},
			refused: { [FEED_GONE]: 'this feed is gone', [ROOM_GONE]: 'the room expired' },
			gone: (text) => this.setConn(text, 'down'),
			down: () => (this.conn.dataset.state = 'down'),
			node: this.conn,
			say: (s) => `disconnected; reconnecting in ${s} s`,
			retrying: () => this.setConn('reconnecting…', 'down'),
		});
	}

	// ws is the feed's socket now (for tests and the curious).
	get ws() {
		return this.sock.ws;
	}

	// socketPath is where the feed's socket is opened: after the last line
	// the pane holds, in the feed the server served it.
	socketPath() {
		const q = new URLSearchParams();
		// The server's own feed, while it is the demo, gives a page at
		// another tag that tag's demo (its log sites, its cases).
		if (this.feed === 'default' && this.tag) q.set('tag', this.tag);
		if (this.lastSeq) {
			q.set('after', String(this.lastSeq));
			if (this.served) q.set('of', this.served);
		}
		const path = `/feeds/${encodeURIComponent(this.feed)}/ws`;
		return q.size ? `${path}?${q}` : path;
	}

	setConn(text, state) {
		this.conn.textContent = text;
		this.conn.dataset.state = state;
	}

	handle(m) {
		if (m.hello) {
			this.sock.connected();
			this.setConn('connected', 'up');
			if (m.hello.reset) this.clear();
			this.served = m.hello.feed || ''; // the feed lastSeq counts in
			this.status(m.hello);
			this.loadFired(true);
		} else if (m.status) {
			this.status(m.status);
		} else if (m.line && typeof m.seq === 'number') {
			if (m.seq <= this.lastSeq) return; // already shown
			this.lastSeq = m.seq;
			this.add(m);
		} else if (m.skipped) {
			this.add({ skipped: m.skipped });
		} else if (m.rewind) {
			this.rewind(m.rewind);
		}
	}

	status(s) {
		this.version = s.kubelet_version || '';
		this.versionTag = s.version_tag || '';
		this.versionFrom = versionSource(s);
		this.feedTag = s.tag || ''; // the tag the feed's lines are classified at
		this.root.classList.toggle('is-demo', !!s.demo);
		this.banner.hidden = !s.demo;
		this.banner.textContent = s.demo ? 'DEMO FEED' : '';
		// The demo's note is the banner's title: on a drawer (narrow windows)
		// the note itself would cost a row of lines.
		this.banner.title = s.demo ? s.note || 'A simulated kubelet, not a real journal' : '';
		// The demo's first screen shows the loop at work: its lines without
		// a case (cadvisor's noise) are hidden until the reader asks.
		if (!this.hideNoneSet) this.setHideNone(!!s.demo);
		this.note.hidden = !s.note;
		this.note.textContent = s.note || '';
		this.note.classList.toggle('live-note-demo', !!s.demo);
		// Compared with this page's tag, not the feed's: a reader may open
		// another tag than the one the feed's lines are classified against.
		// In a room, the room bar says it once, with the driver's switch of
		// the room's tag: a link here would leave the room without a word.
		const link = document.getElementById('room') ? '' : versionLink(this.versionTag, this.tag);
		this.versionNote.replaceChildren();
		this.versionNote.hidden = !link;
		if (link) {
			const read = this.feedTag ? ` Its lines are read at ${this.feedTag}.` : '';
			this.versionNote.append(`This kubelet runs ${this.version} (${this.versionFrom || 'as it says'});${read} This page reads ${this.tag}: line numbers may differ. `);
			const a = el('a', '', `Read ${this.version}`);
			a.href = link;
			this.versionNote.append(a);
		} else if (!document.getElementById('room') && this.feedTag && this.feedTag !== this.tag) {
			// The server's one feed reads its own tag (the demo simulates
			// that kubelet): its lines do not point into this page's source.
			this.versionNote.hidden = false;
			this.versionNote.append(`This feed's lines are read at ${this.feedTag}; this page reads ${this.tag}: they are not linked to its source lines. `);
			const a = el('a', '', `Read ${this.feedTag}`);
			a.href = `/k8s/${this.feedTag}/`;
			this.versionNote.append(a);
		}
	}

	setHideNone(on) {
		this.noneBox.checked = on;
		this.root.classList.toggle('hide-none', on);
		this.refresh();
		this.keep();
	}

	clear() {
		this.list.replaceChildren();
		this.held = [];
		this.heldCount = 0;
		this.incoming = [];
		this.lastSeq = 0;
		this.refresh();
	}

	// rewind drops the lines from seq on: the server showed them before
	// its store had them, and the store refused them; the lines stored in
	// their place follow.
	rewind(seq) {
		const before = (m) => !(m.seq >= seq);
		this.held = this.held.filter(before);
		this.incoming = this.incoming.filter(before);
		for (const li of [...this.list.children]) if (Number(li.dataset.seq) >= seq) li.remove();
		if (this.lastSeq >= seq) this.lastSeq = seq - 1;
		this.refresh();
	}

	add(m) {
		// A reader who selected a case reads its lines: paused there (not
		// by the Pause button, which freezes all), new lines still join the
		// list (below what the reader sees, which stays put), counted as
		// new, so the case's new lines arrive.
		if (this.paused && !(this.selected && this.pausedByScroll)) {
			this.held.push(m);
			this.heldCount++;
			if (this.held.length > MAX_LINES) this.held.splice(0, this.held.length - MAX_LINES);
			this.schedule();
			return;
		}
		if (this.held.length) {
			// Held before the case was selected: they come first.
			this.incoming = this.held.concat(this.incoming);
			this.held = [];
		}
		this.incoming.push(m);
		if (this.incoming.length > MAX_LINES) this.incoming.splice(0, this.incoming.length - MAX_LINES);
		if (this.paused) this.heldCount++;
		this.schedule();
	}

	// schedule renders what arrived at the next frame, and not again
	// within RENDER_EVERY: a line that comes alone shows at once, a flood
	// shows in a few updates a second, not one per frame. Each update lays
	// out and paints the whole list of up to MAX_LINES rows and counts it:
	// at 40 lines a second, an update per line kept half a core busy.
	schedule() {
		if (this.frame) return;
		const wait = this.lastRender + RENDER_EVERY - performance.now();
		const frame = () => {
			this.frame = requestAnimationFrame(() => {
				this.frame = 0;
				this.lastRender = performance.now();
				this.render();
			});
		};
		if (wait <= 0) frame();
		else this.frame = setTimeout(frame, wait);
	}

	render() {
		const batch = this.incoming;
		this.incoming = [];
		if (batch.length) {
			// The reader at the selected case's newest line (or waiting for
			// its first) moves on to its new ones.
			const before = this.caseLines();
			const atNewest = this.paused && this.selected &&
				(before.length ? Number(before[before.length - 1].dataset.seq) === this.curSeq : !this.curSeq);
			const frag = document.createDocumentFragment();
			for (const m of batch) frag.append(this.row(m));
			if (batch.some((m) => m.line?.case && !m.demo)) this.loadFired(false);
			this.list.append(frag);
			const extra = this.list.childElementCount - MAX_LINES;
			if (extra > 0) {
				// Lines cut must not move what the reader sees.
				const h = this.list.scrollHeight;
				this.evict(extra);
				if (this.paused) this.scrollListTo(this.list.scrollTop - (h - this.list.scrollHeight));
			}
			if (!this.paused) this.toBottom();
			else if (atNewest) {
				const now = this.caseLines();
				const last = now[now.length - 1];
				if (last && Number(last.dataset.seq) !== this.curSeq) this.setCur(last);
			}
		}
		this.refresh();
	}

	// evict removes n lines: the oldest without a case first, so that at
	// -v=4, where three lines in four are noise, every case keeps its
	// recent lines; then the oldest. The line the reader is at stays.
	evict(n) {
		const gone = [];
		for (const li of this.list.children) {
			if (gone.length >= n) break;
			if (!li.dataset.case && Number(li.dataset.seq) !== this.curSeq) gone.push(li);
		}
		for (const li of this.list.children) {
			if (gone.length >= n) break;
			if (li.dataset.case && Number(li.dataset.seq) !== this.curSeq) gone.push(li);
		}
		for (const li of gone) li.remove();
	}

	// callerLine is the source line a caller names, when it can be trusted
	// for this page: the kubelet runs the page's tag (or did not say) and the
	// line is on the page.
	callerLine(caller) {
		const m = /^(?:.*\/)?kubelet\.go:(\d+)$/.exec(caller || '');
		if (!m || (this.versionTag && this.versionTag !== this.tag)) return 0;
		if (this.feedTag && this.feedTag !== this.tag) return 0;
		const n = Number(m[1]);
		return lineEl(n) ? n : 0;
	}

	row(m) {
		if (m.skipped) {
			return el('li', 'll ll-skipped', `… ${m.skipped} lines skipped: this browser fell behind`);
		}
		const l = m.line;
		// On the second reading's page a line's key is its part (a phase,
		// the populator), which the server labels it with; else its case.
		const key = (this.byPart ? m.part : l.case) || '';
		const li = el('li', 'll');
		li.dataset.seq = m.seq;
		li.tabIndex = -1;
		li.dataset.case = key;
		if (key && !this.hue.has(key)) {
			// A case this tag's select does not have (readiness at v1.20.0).
			li.classList.add('ll-elsewhere');
			li.title = `${key}: no such case at ${this.tag}`;
		} else if (key) {
			const line = this.callerLine(l.caller);
			if (line) li.dataset.line = line;
			li.title = line ? `${key}: line ${line} — click or Enter to show it` : `${key} — click or Enter to show the case`;
		} else {
			li.classList.add('ll-none');
		}
		if (m.demo) li.classList.add('ll-demo');
		this.lineOf.set(li, m);
		if (key && !m.demo && l.host) this.node = l.host;
		if (key && key === this.selected) li.classList.add('sel');
		const sev = String(l.severity || '').charAt(0).toUpperCase();
		if ('WEF'.includes(sev) && sev) li.classList.add('sev-' + sev);
		const pods = (l.pods || []).map(clean);
		li.dataset.pods = pods.join(' ');
		if (this.podFilter && !li.dataset.pods.includes(this.podFilter)) li.classList.add('pod-hidden');

		li.append(el('time', 'll-time', clock(l.time)));
		const chip = el('span', 'll-chip', key || '—');
		if (key) chip.dataset.hue = this.hue.has(key) ? String(this.hue.get(key)) : 'other';
		li.append(chip);
		if (pods.length) li.append(el('span', 'll-pods', pods.join(', ')));
		let text = clean(body(l));
		let cutBy = 0;
		if (text.length > SHOW_CHARS) {
			cutBy = text.length - SHOW_CHARS;
			text = text.slice(0, SHOW_CHARS);
		}
		li.append(el('span', 'll-msg', text));
		if (cutBy || m.cut) {
			const why = m.cut ? 'line cut at 64 KiB by the server' : `${cutBy} more characters not shown`;
			li.append(el('span', 'll-cut', cutBy ? `[+${cutBy} chars]` : '[cut]'));
			li.lastChild.title = why;
		}
		if (key && !m.demo && !this.byPart) { // a volume line is pinned with its chain (chains.js)
			const pinned = this.pins.has(m.seq);
			const b = el('button', 'll-pin', pinned ? 'pinned' : 'pin');
			b.type = 'button';
			b.dataset.pin = '';
			b.title = this.notes.words.pin;
			b.setAttribute('aria-label', b.title);
			b.disabled = pinned;
			li.append(b);
		}
		return li;
	}

	pause(byScroll = true) {
		this.paused = true;
		// Lines waiting for the next frame are held too: the view freezes
		// now (with a case selected, lines go on joining the list, below).
		if (!(this.selected && byScroll)) {
			this.held.push(...this.incoming);
			this.heldCount += this.incoming.length;
			this.incoming = [];
		}
		this.pausedByScroll = byScroll;
		this.root.classList.add('paused');
		this.pauseBtn.textContent = 'Resume';
		this.updateMore();
	}

	resume() {
		this.paused = false;
		this.pausedByScroll = false;
		this.holdCur = false;
		this.root.classList.remove('paused');
		this.pauseBtn.textContent = 'Pause';
		this.incoming.push(...this.held);
		if (this.incoming.length > MAX_LINES) this.incoming.splice(0, this.incoming.length - MAX_LINES);
		this.held = [];
		this.heldCount = 0;
		this.toBottom();
		this.schedule();
	}

	updateMore() {
		// Nothing new since the pause (a relay that finished, say): no
		// button; the Pause button resumes.
		this.more.hidden = !this.paused || this.heldCount === 0;
		if (this.paused) {
			const n = this.heldCount;
			this.more.textContent = `${n} new ↓ resume`;
			this.more.title = `Paused: ${n} line${n === 1 ? '' : 's'} arrived since; show them and follow the tail again`;
		}
	}

	// shown says whether a line is on view under the pane's filters.
	shown(li) {
		if (li.classList.contains('pod-hidden')) return false;
		if (li.classList.contains('ll-none') && this.root.classList.contains('hide-none')) return false;
		if (this.selected && this.root.classList.contains('filter-case') && li.dataset.case !== this.selected) return false;
		return true;
	}

	shownLines() {
		return [...this.list.children].filter((li) => li.dataset.seq && this.shown(li));
	}

	// caseLines are the selected case's lines the pane holds and shows.
	caseLines(all = false) {
		if (!this.selected) return [];
		return [...this.list.querySelectorAll(`li.ll[data-case="${CSS.escape(this.selected)}"]`)].filter((li) => all || this.shown(li));
	}

	// refresh brings every count up to what the pane holds and shows.
	refresh() {
		const counts = new Map();
		for (const li of this.list.children) {
			const k = li.dataset.case;
			if (k && !li.classList.contains('pod-hidden')) counts.set(k, (counts.get(k) || 0) + 1);
		}
		for (const span of document.querySelectorAll('[data-case-count]')) {
			const inPane = counts.get(span.dataset.caseCount) || 0;
			// The session's count (the feed's record) unless a pod filter
			// narrows the pane, whose lines are all the filter can see.
			const n = this.podFilter ? inPane : Math.max(inPane, this.fired.get(span.dataset.caseCount));
			if (span.textContent !== String(n)) span.textContent = String(n);
			const title = this.podFilter
				? `${n} line${n === 1 ? '' : 's'} of this case in the live pane naming ${this.podFilter}`
				: `${n} line${n === 1 ? '' : 's'} of this case in this feed's journal (${inPane} in the live pane)`;
			if (span.title !== title) span.title = title;
			span.classList.toggle('fired', n > 0);
		}
		this.updateSel();
		this.updateMore();
	}

	// updateSel says how many of the selected case's lines are shown, and
	// which one the reader is at.
	updateSel() {
		this.selBar.hidden = !this.selected;
		if (!this.selected) return;
		const lines = this.caseLines();
		const i = lines.findIndex((li) => Number(li.dataset.seq) === this.curSeq);
		for (const li of this.list.querySelectorAll('li.cur')) if (Number(li.dataset.seq) !== this.curSeq) li.classList.remove('cur');
		const n = lines.length;
		let text;
		const all = this.podFilter ? 0 : this.fired.get(this.selected);
		if (!n && all) text = `${this.selected}: ${all} line${all === 1 ? '' : 's'} in the journal; bringing them back…`;
		else if (!n) text = `${this.selected}: no line of this case in the pane${this.podFilter ? ' for ' + this.podFilter : ''} yet`;
		else if (i >= 0) text = `${this.selected}: line ${i + 1} of ${n}`;
		else text = `${this.selected}: ${n} line${n === 1 ? '' : 's'} highlighted`;
		if (this.selInfo.textContent !== text) this.selInfo.textContent = text;
		this.prevBtn.disabled = !n || i === 0;
		this.nextBtn.disabled = !n || (i >= 0 && i === n - 1);
	}

	// step moves to the previous (-1) or next (+1) line of the selected case.
	step(d) {
		const lines = this.caseLines();
		if (!lines.length) return;
		let i = lines.findIndex((li) => Number(li.dataset.seq) === this.curSeq);
		if (i < 0) i = d < 0 ? lines.length - 1 : 0;
		else i = Math.max(0, Math.min(lines.length - 1, i + d));
		this.setCur(lines[i]);
	}

	// setCur marks one line as the one the reader is at, and shows it: the
	// pane holds still there (a line to read is not a tail to follow).
	setCur(li) {
		if (!this.paused) this.pause(true);
		this.curSeq = Number(li.dataset.seq);
		for (const o of this.list.querySelectorAll('li.cur')) o.classList.remove('cur');
		li.classList.add('cur');
		for (const o of this.list.querySelectorAll('li.ll[tabindex="0"]')) o.tabIndex = -1;
		li.tabIndex = 0;
		this.holdCur = true;
		// The bars above the lines and the resume button take their place
		// before the line is placed.
		this.updateSel();
		this.updateMore();
		this.bringIntoView(li);
	}

	// bringIntoView scrolls the list (not the page) so that all of li is
	// on view, in the middle of what the reader sees when it was not.
	bringIntoView(li) {
		if (!this.list.clientHeight || !this.shown(li)) return; // a closed drawer: keep() places it on opening
		const r = li.getBoundingClientRect();
		const v = this.visibleBox();
		if (r.top >= v.top && r.bottom <= v.bottom) return;
		const room = v.bottom - v.top;
		const at = r.height >= room ? v.top : v.top + (room - r.height) / 2;
		this.scrollListTo(this.list.scrollTop + r.top - at);
	}

	// select follows the page's selection: its case's lines stand out; a
	// newly selected case's newest line comes into view, or the log line
	// the reader clicked stays marked.
	select(s, how) {
		const key = s.key || '';
		const changed = key !== this.selected;
		this.selected = key;
		this.root.classList.toggle('has-sel', !!key);
		for (const li of this.list.children) li.classList.toggle('sel', !!key && li.dataset.case === key);
		this.filterBtn.disabled = !key;
		this.filterBtn.textContent = key ? `Only ${key}` : `Only this ${this.unit}`;
		if (!key) {
			this.root.classList.remove('filter-case');
			this.filterBtn.setAttribute('aria-pressed', 'false');
			this.curSeq = 0;
			for (const o of this.list.querySelectorAll('li.cur')) o.classList.remove('cur');
		}
		if (key && how.from !== 'pane' && drawerMode.matches && how.from !== 'url' && how.from !== 'room') {
			this.setOpen(true);
			this.uncover(key);
		}
		const bySeq = s.seq ? this.list.querySelector(`li.ll[data-seq="${s.seq}"]`) : null;
		const cur = this.curLine();
		if (bySeq) {
			this.setCur(bySeq);
		} else if (key && !changed && (how.from === 'source' || how.from === 'keys') && cur && this.shown(cur)) {
			// The reader picks the case again (its chip, j/k): its line comes
			// back into view. (A room re-applying the driver's case does not
			// stop a follower's pane.)
			this.setCur(cur);
		} else if (key && (changed || !this.curSeq)) {
			const lines = this.caseLines();
			if (lines.length) this.setCur(lines[lines.length - 1]);
			else this.curSeq = 0;
		}
		if (key && changed) this.fetchCase(key);
		this.refresh();
	}

	// feedURL is a path under the feed the server serves this pane.
	feedURL(path) {
		return `/feeds/${encodeURIComponent(this.served || this.feed)}${path}`;
	}

	// loadFired asks for the feed's record of what fired (evidence.js) and
	// brings the counts, and the selected case's lines that left the pane,
	// up to it.
	async loadFired(force) {
		if (!(await this.fired.load(this.feedURL('/fired'), force))) return;
		this.refresh();
		if (this.selected && this.fired.get(this.selected) > this.caseLines(true).length) this.fetchCase(this.selected);
	}

	// fetchCase brings back the selected case's lines that left the pane
	// (noise floods past them within a minute at -v=4): read from the
	// feed's stream by sequence, placed in order among the pane's lines.
	async fetchCase(key) {
		if (this.fetching === key) return;
		this.fetching = key;
		let text = '';
		try {
			const r = await fetch(this.feedURL(`/fired/${encodeURIComponent(key)}/lines?limit=${MAX_LINES / 2}`), { cache: 'no-store' });
			if (r.ok) text = await r.text();
		} catch {
			// nothing to add: the pane shows what it holds
		} finally {
			this.fetching = '';
		}
		if (this.selected !== key || !text) return;
		const rows = [];
		for (const m of jsonLines(text)) {
			if (m.line && typeof m.seq === 'number' && !this.list.querySelector(`li.ll[data-seq="${m.seq}"]`)) rows.push(m);
		}
		if (!rows.length) return;
		const h = this.list.scrollHeight;
		let at = this.list.firstElementChild;
		for (const m of rows) {
			while (at && !(Number(at.dataset.seq) > m.seq)) at = at.nextElementSibling;
			const li = this.row(m);
			li.classList.add('ll-fetched');
			this.list.insertBefore(li, at);
		}
		const extra = this.list.childElementCount - MAX_LINES;
		if (extra > 0) this.evict(extra);
		if (this.paused) this.scrollListTo(this.list.scrollTop + (this.list.scrollHeight - h));
		else this.toBottom();
		this.refresh();
		const lines = this.caseLines();
		if (!this.curSeq && lines.length) this.setCur(lines[lines.length - 1]);
		announce(`${key}: ${rows.length} earlier line${rows.length === 1 ? '' : 's'} brought back from the journal`);
	}

	// pin keeps a classified line as evidence (evidence.js), with the
	// reader's name.
	async pin(li, btn) {
		const m = li && this.lineOf.get(li);
		if (!m) return;
		const said = await this.pins.pin(m, { version: this.version, versionFrom: this.versionFrom, node: this.node }, { author: readerName(), color: readerColor() });
		announce(said.text);
		if (!said.ok) return;
		btn.textContent = 'pinned';
		btn.disabled = true;
	}

	// uncover scrolls the page so that the drawer, just opened, does not
	// cover the heading of the case the reader selected there.
	uncover(key) {
		const head = document.querySelector(`section.case[data-case="${CSS.escape(key)}"] > .case-head`);
		if (!head) return;
		const r = head.getBoundingClientRect();
		const drawerTop = this.root.getBoundingClientRect().top;
		if (r.bottom <= drawerTop || r.top >= window.innerHeight) return;
		const bar = document.querySelector('.room-bar');
		const top = bar && getComputedStyle(bar).position === 'sticky' ? Math.max(0, bar.getBoundingClientRect().bottom) : 0;
		window.scrollBy({ top: r.top - top - 8, behavior: 'instant' });
	}

	applyPodFilter() {
		this.podFilter = this.pod.value.trim();
		this.root.classList.toggle('pod-on', !!this.podFilter);
		this.podBtn.textContent = this.podFilter ? `Pod: ${this.podFilter}` : 'Pod…';
		for (const li of this.list.children) {
			li.classList.toggle('pod-hidden', !!this.podFilter && !(li.dataset.pods || '').includes(this.podFilter));
		}
		this.refresh();
	}
}

const root = document.getElementById('live');
if (root) {
	const pane = new LivePane(root);
	// For tests and the curious: the pane's state, read-only by convention.
	root.livePane = pane;
}
