// timing.js: where a journal line's time goes, for a reader who asks (the
// live pane's "Where the time goes"). Each line the server sends from a
// journal carries its stamps (lat: how long journald held it, when the
// relay read it, when the server received it) and each socket message ends
// with its send time ({"sent":µs}); the page adds when it had the message.
// The four stages, medians of the last lines:
//
//	journald  the entry's realtime stamp → the relay read it
//	relay     read → the server received it
//	server    received → written to this page's socket
//	page      written → this page had it
//
// Stages across two machines count their clocks' difference too. The
// page's own stage is what the server cannot see: the page says it (POST
// /feeds/{feed}/timing, at most once a minute), and /metrics histograms all
// four (syncloop_line_stage_seconds).

import { el } from './dom.js';

const KEEP = 500; // samples kept per stage
const REPORT_EVERY = 60_000; // ms between two reports to the server
const STAGES = [
	['journald', 'journald', 'its realtime stamp → the relay read it'],
	['relay', 'relay → server', 'read → the server received it'],
	['server', 'server → socket', 'received → written to this page'],
	['page', 'socket → page', 'written → this page had it'],
];

function nowMicros() {
	return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

function median(xs) {
	if (!xs.length) return NaN;
	const s = [...xs].sort((a, b) => a - b);
	return s[(s.length - 1) >> 1];
}

function ms(us) {
	if (Number.isNaN(us)) return '—';
	const v = us / 1000;
	return v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`;
}

export class Timing {
	// url is where the page's own stage is said (a function: the feed the
	// server serves can change).
	constructor(url) {
		this.url = url;
		this.samples = Object.fromEntries(STAGES.map(([k]) => [k, []]));
		this.unsaid = []; // page samples not yet told to the server
		this.lastReport = Date.now();
		this.el = el('details', 'live-timing');
		const sum = el('summary', '', 'timing');
		sum.title = 'Where the time goes: each stage of a line, from journald to this page';
		this.el.append(sum);
		const panel = el('div', 'live-timing-panel');
		this.table = el('dl', 'live-timing-stages');
		this.foot = el('p', 'live-timing-foot', 'No line from a journal yet: the demo has no stamps.');
		panel.append(el('p', 'live-timing-h', 'Where the time goes'), this.table, this.foot);
		this.el.append(panel);
		this.el.addEventListener('toggle', () => this.draw());
	}

	// message takes one socket message's feed messages, in order, read at
	// `at` (µs): its lines' stamps and its send time.
	message(msgs, at = nowMicros()) {
		let sent = 0;
		let since = 0;
		const stamped = [];
		for (const m of msgs) {
			if (m.line && m.lat && m.lat.recv) stamped.push(m.lat);
			else if (typeof m.sent === 'number') [sent, since] = [m.sent, m.since || 0];
		}
		// Lines received before this page's socket opened are its history:
		// they waited for the page, not for the server.
		const lats = stamped.filter((l) => l.recv >= since);
		if (!lats.length || !sent) return;
		for (const l of lats) {
			if (l.age > 0) this.add('journald', l.age);
			if (l.read > 0) this.add('relay', Math.max(0, l.recv - l.read));
			this.add('server', Math.max(0, sent - l.recv));
		}
		const page = Math.max(0, at - sent);
		this.add('page', page);
		this.unsaid.push(page);
		if (this.unsaid.length > 200) this.unsaid.splice(0, this.unsaid.length - 200);
		if (this.el.open) this.drawSoon();
		if (Date.now() - this.lastReport >= REPORT_EVERY) this.report();
	}

	add(stage, us) {
		const s = this.samples[stage];
		s.push(us);
		if (s.length > KEEP) s.splice(0, s.length - KEEP);
	}

	drawSoon() {
		if (this.frame) return;
		this.frame = setTimeout(() => {
			this.frame = 0;
			this.draw();
		}, 1000);
	}

	draw() {
		if (!this.el.open) return;
		const rows = [];
		let total = 0;
		for (const [k, name, what] of STAGES) {
			const m = median(this.samples[k]);
			if (!Number.isNaN(m)) total += m;
			const dt = el('dt', '', name);
			dt.title = what;
			rows.push(dt, el('dd', '', ms(m)));
		}
		this.table.replaceChildren(...rows);
		const n = this.samples.server.length;
		this.foot.textContent = n
			? `Medians of the last ${n} lines (${ms(total)} in all). Stages across two machines count their clocks' difference too.`
			: 'No line from a journal yet: the demo has no stamps.';
	}

	// report tells the server the page's own stage (what /metrics cannot
	// see otherwise); a refusal is no matter: the next minute tries again.
	async report() {
		this.lastReport = Date.now();
		if (!this.unsaid.length) return;
		const page = this.unsaid.splice(0);
		try {
			await fetch(this.url(), { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ page }) });
		} catch {
			// offline: the socket's reconnect says so
		}
	}
}
