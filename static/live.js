// live.js: the live pane. It streams a feed's classified kubelet log lines
// from /feeds/{feed}/ws (history first, then the tail) into #live, beside the
// source: time, case chip, pods, message.
//
// With the reading page (reader.js) it speaks through two events on document:
// it listens for "syncloop:case" {key} (the reader selected a case: its lines
// are highlighted, the others dimmed, and a toggle filters to them) and
// dispatches "syncloop:goto" {key, line} when a log line is clicked (line is
// the klog caller's line when the kubelet runs the page's tag, else 0).
//
// Log text is untrusted: it only ever reaches the page through textContent.

const MAX_LINES = 2000; // lines kept in the pane (and while paused)
const SHOW_CHARS = 2000; // characters of a message shown before a cut marker
const KNOWN_CASES = ['config', 'pleg', 'sync', 'housekeeping', 'liveness', 'readiness', 'startup', 'container'];

// el builds an element with a class and text; never HTML.
function el(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls) e.className = cls;
	if (text !== undefined) e.textContent = text;
	return e;
}

// clean removes ANSI escape sequences and control characters but tab.
// versionLink is the reading of the kubelet's own version, when it is a
// release tag other than the page's ("v1.31.0+abc" reads as v1.31.0).
function versionLink(version, tag) {
	const v = (version || '').split('+')[0];
	return /^v\d+\.\d+\.\d+$/.test(v) && v !== tag ? `/k8s/${v}/` : '';
}

function clean(s) {
	return String(s ?? '')
		.replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
		.replace(/\x1b[@-_]/g, '')
		.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}

function caseClass(key) {
	return 'c-' + (KNOWN_CASES.includes(key) ? key : 'other');
}

// clock is the time of day of an RFC 3339 stamp, as written (no zone change).
function clock(t) {
	if (typeof t !== 'string' || t.startsWith('0001-')) return '';
	const m = /T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)/.exec(t);
	return m ? m[1] : '';
}

// klogHead is a klog header: what precedes the message and its key=values.
const klogHead = /[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\s\]]+\] /;

// body is what a line says: the klog message with its key=value pairs when
// the kubelet's own line has them (the classifier's message is the message
// alone), else the message, else the line. The kubelet's own line is text
// when the journal wraps it (a journald JSON entry comes with text only).
function body(l) {
	const own = String(l.text || l.raw || '');
	if (l.format === 'raw' || !l.message) return own;
	const m = klogHead.exec(own);
	return m ? own.slice(m.index + m[0].length) : l.message;
}

class LivePane {
	constructor(root) {
		this.root = root;
		this.feed = root.dataset.feed || 'default';
		this.tag = root.dataset.tag || '';
		try {
			this.cases = JSON.parse(root.dataset.cases || '[]');
		} catch {
			this.cases = [];
		}
		this.lastSeq = 0;
		this.version = '';
		this.selected = '';
		this.counts = new Map();
		this.paused = false;
		this.held = []; // lines that arrived while paused (the last MAX_LINES)
		this.heldCount = 0; // all of them, for "142 new lines"
		this.incoming = []; // lines waiting for the next animation frame
		this.frame = 0;
		this.backoff = 500;
		this.build();
		this.listen();
		this.connect();
	}

	build() {
		const r = this.root;
		r.classList.add('live-pane');
		const head = el('header', 'live-head');
		head.append(el('h2', 'live-title', 'Live journal'));
		this.conn = el('span', 'live-conn', 'connecting…');
		head.append(this.conn);
		r.append(head);

		this.banner = el('p', 'live-banner');
		this.banner.hidden = true;
		this.versionNote = el('p', 'live-version');
		this.versionNote.hidden = true;
		this.note = el('p', 'live-note');
		this.note.hidden = true;
		r.append(this.banner, this.versionNote, this.note);

		const bar = el('div', 'live-bar');
		this.pauseBtn = el('button', 'live-pause', 'Pause');
		this.pauseBtn.type = 'button';
		this.pauseBtn.title = 'Freeze the view; lines keep arriving and are counted';
		this.filterBtn = el('button', 'live-filter', 'Only this case');
		this.filterBtn.type = 'button';
		this.filterBtn.disabled = true;
		this.filterBtn.setAttribute('aria-pressed', 'false');
		this.pod = el('input', 'live-pod');
		this.pod.type = 'search';
		this.pod.placeholder = 'pod filter, e.g. probe-me';
		this.pod.setAttribute('aria-label', 'Show only lines naming this pod');
		bar.append(this.pauseBtn, this.filterBtn, this.pod);
		r.append(bar);

		this.selInfo = el('p', 'live-sel');
		this.selInfo.hidden = true;
		r.append(this.selInfo);

		this.list = el('ol', 'live-lines');
		this.list.setAttribute('aria-live', 'off');
		r.append(this.list);

		this.more = el('button', 'live-more');
		this.more.type = 'button';
		this.more.hidden = true;
		r.append(this.more);
	}

	listen() {
		this.pauseBtn.addEventListener('click', () => (this.paused ? this.resume() : this.pause(false)));
		this.more.addEventListener('click', () => this.resume());
		this.filterBtn.addEventListener('click', () => {
			const on = !this.root.classList.contains('filter-case');
			this.root.classList.toggle('filter-case', on);
			this.filterBtn.setAttribute('aria-pressed', String(on));
		});
		this.pod.addEventListener('input', () => this.applyPodFilter());
		// Scrolling up (the reader's own wheel or touch, not the pane's
		// following of the tail) pauses; scrolling back to the bottom resumes.
		this.list.addEventListener('wheel', (ev) => {
			if (ev.deltaY < 0 && !this.paused) this.pause(true);
		}, { passive: true });
		this.list.addEventListener('touchmove', () => {
			if (!this.paused) this.pause(true);
		}, { passive: true });
		this.list.addEventListener('scroll', () => {
			const atBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 8;
			if (atBottom && this.paused && this.pausedByScroll) this.resume();
		});
		this.list.addEventListener('click', (ev) => {
			const li = ev.target.closest('li.ll');
			if (!li || !li.dataset.case) return;
			const line = Number(li.dataset.line || 0);
			document.dispatchEvent(new CustomEvent('syncloop:goto', { detail: { key: li.dataset.case, line } }));
		});
		document.addEventListener('syncloop:case', (ev) => this.select(ev.detail?.key || ''));
	}

	// connect opens the feed's socket, resuming after the last line seen.
	connect() {
		const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
		let url = `${proto}//${location.host}/feeds/${encodeURIComponent(this.feed)}/ws`;
		if (this.lastSeq) url += `?after=${this.lastSeq}`;
		const ws = new WebSocket(url);
		this.ws = ws;
		ws.addEventListener('message', (ev) => {
			for (const part of String(ev.data).split('\n')) {
				if (!part) continue;
				let m;
				try {
					m = JSON.parse(part);
				} catch {
					continue;
				}
				this.handle(m);
			}
		});
		ws.addEventListener('close', (ev) => {
			// 4xxx: a permanent refusal (server/sockets.go); retrying cannot help.
			if (ev.code === 4404 || ev.code === 4410) {
				this.setConn(ev.code === 4410 ? 'the room expired' : 'this feed is gone', 'down');
				return;
			}
			const wait = this.backoff / 2 + Math.random() * (this.backoff / 2);
			this.setConn(`disconnected; reconnecting in ${(wait / 1000).toFixed(1)} s`, 'down');
			this.backoff = Math.min(this.backoff * 2, 15000);
			setTimeout(() => this.connect(), wait);
		});
	}

	setConn(text, state) {
		this.conn.textContent = text;
		this.conn.dataset.state = state;
	}

	handle(m) {
		if (m.hello) {
			this.backoff = 500;
			this.setConn('connected', 'up');
			if (m.hello.reset) this.clear();
			this.status(m.hello);
		} else if (m.status) {
			this.status(m.status);
		} else if (m.line && typeof m.seq === 'number') {
			if (m.seq <= this.lastSeq) return; // already shown
			this.lastSeq = m.seq;
			this.add(m);
		} else if (m.skipped) {
			this.add({ skipped: m.skipped });
		}
	}

	status(s) {
		this.version = s.kubelet_version || '';
		this.root.classList.toggle('is-demo', !!s.demo);
		this.banner.hidden = !s.demo;
		this.banner.textContent = s.demo ? 'DEMO FEED — simulated kubelet' : '';
		this.note.hidden = !s.note;
		this.note.textContent = s.note || '';
		// Compared with this page's tag, not the feed's: a reader may open
		// another tag than the one the feed's lines are classified against.
		const link = versionLink(this.version, this.tag);
		this.versionNote.replaceChildren();
		this.versionNote.hidden = !link;
		if (link) {
			this.versionNote.append(`This kubelet runs ${this.version}; the page reads ${this.tag}: line numbers may differ. `);
			const a = el('a', '', `Read ${this.version}`);
			a.href = link;
			this.versionNote.append(a);
		}
	}

	clear() {
		this.list.replaceChildren();
		this.held = [];
		this.heldCount = 0;
		this.incoming = [];
		this.lastSeq = 0;
		this.counts.clear();
		this.updateCounts();
		this.updateMore();
	}

	add(m) {
		if (m.line) {
			const key = m.line.case || '';
			if (key) this.counts.set(key, (this.counts.get(key) || 0) + 1);
		}
		if (this.paused) {
			this.held.push(m);
			this.heldCount++;
			if (this.held.length > MAX_LINES) this.held.splice(0, this.held.length - MAX_LINES);
			this.scheduleCounts();
			return;
		}
		this.incoming.push(m);
		if (this.incoming.length > MAX_LINES) this.incoming.splice(0, this.incoming.length - MAX_LINES);
		this.schedule();
	}

	// schedule renders what arrived at the next frame: one DOM update per
	// frame however fast lines come.
	schedule() {
		if (this.frame) return;
		this.frame = requestAnimationFrame(() => {
			this.frame = 0;
			this.render();
		});
	}

	scheduleCounts() {
		this.schedule();
	}

	render() {
		const batch = this.incoming;
		this.incoming = [];
		if (batch.length) {
			const frag = document.createDocumentFragment();
			for (const m of batch) frag.append(this.row(m));
			this.list.append(frag);
			const extra = this.list.childElementCount - MAX_LINES;
			for (let i = 0; i < extra; i++) this.list.firstElementChild.remove();
			if (!this.paused) this.list.scrollTop = this.list.scrollHeight;
		}
		this.updateCounts();
		this.updateMore();
	}

	// callerLine is the source line a caller names, when it can be trusted
	// for this page: the kubelet runs the page's tag (or did not say) and the
	// line is on the page.
	callerLine(caller) {
		const m = /^(?:.*\/)?kubelet\.go:(\d+)$/.exec(caller || '');
		if (!m || (this.version && this.version.split('+')[0] !== this.tag)) return 0;
		const n = Number(m[1]);
		return document.getElementById('L' + n) ? n : 0;
	}

	row(m) {
		if (m.skipped) {
			return el('li', 'll ll-skipped', `… ${m.skipped} lines skipped: this browser fell behind`);
		}
		const l = m.line;
		const key = l.case || '';
		const li = el('li', 'll');
		li.dataset.seq = m.seq;
		if (key) {
			li.dataset.case = key;
			const line = this.callerLine(l.caller);
			if (line) li.dataset.line = line;
			li.title = line ? `${key}: line ${line} — click to show it` : `${key} — click to show the case`;
		} else {
			li.classList.add('ll-none');
		}
		if (m.demo) li.classList.add('ll-demo');
		if (key && key === this.selected) li.classList.add('sel');
		const sev = String(l.severity || '').charAt(0).toUpperCase();
		if ('WEF'.includes(sev) && sev) li.classList.add('sev-' + sev);
		const pods = (l.pods || []).map(clean);
		li.dataset.pods = pods.join(' ');
		if (this.podFilter && !li.dataset.pods.includes(this.podFilter)) li.classList.add('pod-hidden');

		li.append(el('time', 'll-time', clock(l.time)));
		li.append(el('span', 'll-chip ' + (key ? caseClass(key) : 'c-none'), key || '—'));
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
		return li;
	}

	pause(byScroll = true) {
		this.paused = true;
		// Lines waiting for the next frame are held too: the view freezes now.
		this.held.push(...this.incoming);
		this.heldCount += this.incoming.length;
		this.incoming = [];
		this.pausedByScroll = byScroll;
		this.root.classList.add('paused');
		this.pauseBtn.textContent = 'Resume';
		this.updateMore();
	}

	resume() {
		this.paused = false;
		this.pausedByScroll = false;
		this.root.classList.remove('paused');
		this.pauseBtn.textContent = 'Pause';
		this.incoming.push(...this.held);
		if (this.incoming.length > MAX_LINES) this.incoming.splice(0, this.incoming.length - MAX_LINES);
		this.held = [];
		this.heldCount = 0;
		this.schedule();
	}

	updateMore() {
		this.more.hidden = !this.paused;
		if (this.paused) {
			const n = this.heldCount;
			this.more.textContent = `${n} new line${n === 1 ? '' : 's'} — resume`;
		}
	}

	updateCounts() {
		for (const span of document.querySelectorAll('[data-case-count]')) {
			const n = this.counts.get(span.dataset.caseCount) || 0;
			if (span.textContent !== String(n)) span.textContent = String(n);
			span.title = `${n} log line${n === 1 ? '' : 's'} from this case since the page opened (recent history included)`;
			span.classList.toggle('fired', n > 0);
		}
		if (this.selected) {
			const n = this.counts.get(this.selected) || 0;
			this.selInfo.textContent = `${this.selected}: ${n} line${n === 1 ? '' : 's'} highlighted`;
		}
		this.updateMore();
	}

	select(key) {
		this.selected = key;
		this.root.classList.toggle('has-sel', !!key);
		for (const li of this.list.children) li.classList.toggle('sel', !!key && li.dataset.case === key);
		this.filterBtn.disabled = !key;
		this.filterBtn.textContent = key ? `Only ${key}` : 'Only this case';
		if (!key) {
			this.root.classList.remove('filter-case');
			this.filterBtn.setAttribute('aria-pressed', 'false');
		}
		this.selInfo.hidden = !key;
		this.updateCounts();
	}

	applyPodFilter() {
		this.podFilter = this.pod.value.trim();
		for (const li of this.list.children) {
			li.classList.toggle('pod-hidden', !!this.podFilter && !(li.dataset.pods || '').includes(this.podFilter));
		}
	}
}

const root = document.getElementById('live');
if (root) {
	const pane = new LivePane(root);
	// For tests and the curious: the pane's state, read-only by convention.
	root.livePane = pane;
}
