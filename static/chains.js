// chains.js: the volume manager's evidence beside its code. It reads the
// feed's record of the volume reading (GET /feeds/{feed}/chains: what the
// server labelled from the stored journal, never the demo) and shows each
// chain, "this volume went desired → verifying → mounting → mounted", with
// the time and the journal's line of every step, and under each phase of
// the page how many lines of the journal came from it. In a room, a chain
// can be pinned to the room's worksheet (POST /rooms/{id}/pins
// {"chain":ID}): the server reads the chain from the stream, never from
// this page. Every text is set as text: a journal line is untrusted.

import { el, visible } from './dom.js';
import { readerColor, readerName } from './identity.js';

const box = document.querySelector('[data-chains]');
const room = document.querySelector('#room')?.dataset.room;
const EVERY = 5000;

function when(t) {
	if (!t) return 'no time';
	const d = new Date(t);
	return Number.isNaN(d.getTime()) ? 'no time' : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', fractionalSecondDigits: 3, hour12: false });
}

// partLink links a step's part to its phase's section on the page, when
// the page has one (the populator is no phase).
function partLink(part) {
	if (document.getElementById(`part-${part}`)) {
		const a = el('a', 'chain-part');
		a.href = `#part-${part}`;
		a.append(el('code', '', part));
		return a;
	}
	return el('code', 'chain-part', part);
}

function step(s) {
	const li = el('li', 'chain-step');
	li.dataset.step = s.step;
	const head = el('p', 'chain-step-head');
	head.append(el('strong', '', s.step), ' ', el('span', 'chain-time', when(s.first.time)), ' · ', partLink(s.part));
	if (s.count > 1) head.append(' ', el('span', 'chain-count', `×${s.count}, last at ${when(s.last.time)}`));
	li.append(head, el('pre', 'chain-line', visible(s.first.text)));
	return li;
}

async function pin(c, button, out) {
	button.disabled = true;
	try {
		const res = await fetch(`/rooms/${encodeURIComponent(room)}/pins`, {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ chain: c.id, author: readerName(), color: readerColor() }),
		});
		const body = await res.json().catch(() => ({}));
		out.textContent = res.ok ? 'Pinned to the room\'s worksheet.' : (body.error || `Not pinned (${res.status}).`);
	} catch {
		out.textContent = 'Not pinned: the server did not answer; try again.';
	} finally {
		button.disabled = false;
	}
}

function chain(c) {
	const li = el('li', 'chain');
	li.dataset.chain = String(c.id);
	const who = c.pod || c.uid || 'a pod';
	const head = el('p', 'chain-head');
	head.append('The volume ', el('code', '', visible(c.spec || c.volume || '?')), ' of ', el('code', '', visible(who)), ' went ',
		el('span', 'chain-path', c.path), '.');
	li.append(head);
	if (c.volume) {
		const u = el('p', 'chain-unique');
		u.append('UniqueName ', el('code', '', visible(c.volume)), c.uid ? ', pod UID ' : '', c.uid ? el('code', '', visible(c.uid)) : '');
		li.append(u);
	}
	const d = el('details', 'chain-lines');
	d.append(el('summary', '', `Its ${c.steps.length} steps and their journal lines`));
	const ol = el('ol', 'chain-steps');
	ol.append(...c.steps.map(step));
	d.append(ol);
	li.append(d);
	if (room) {
		const b = el('button', 'chain-pin', 'Pin this chain to the room\'s worksheet');
		b.type = 'button';
		const out = el('span', 'chain-pin-result');
		out.setAttribute('role', 'status');
		b.addEventListener('click', () => pin(c, b, out));
		li.append(b, ' ', out);
	}
	return li;
}

// partCounts says under each phase how many of the journal's lines came
// from it.
function partCounts(parts) {
	for (const sec of document.querySelectorAll('section.part[id^="part-"]')) {
		const key = sec.id.slice('part-'.length);
		let p = sec.querySelector('[data-part-evidence]');
		if (!p) {
			// In the phase's margin, above its note: the section is a grid
			// (head, note, code) that takes no extra child of its own.
			p = el('p', 'part-evidence');
			p.dataset.partEvidence = '';
			const margin = sec.querySelector(':scope > .margin');
			if (margin) margin.prepend(p);
			else sec.querySelector(':scope > h2')?.after(p);
		}
		const n = parts[key]?.count || 0;
		p.textContent = n ? `The journal shows ${n} line${n === 1 ? '' : 's'} of this phase, the last at ${when(parts[key].last.time)}.` : 'The journal shows no line of this phase yet.';
	}
}

function render(r) {
	const list = box.querySelector('[data-chains-list]');
	const status = box.querySelector('[data-chains-status]');
	if (!r.reading) {
		status.textContent = 'The journal\'s lines are being matched to this reading\'s log sites; this panel fills in a moment.';
	} else if (!r.chains.length) {
		status.textContent = 'No volume in the journal yet: a pod with a volume (the lab\'s scratch pod has an emptyDir) shows its chain here.';
	} else {
		status.textContent = `${r.chains.length} volume${r.chains.length === 1 ? '' : 's'} in the journal, newest last.`;
	}
	// Keep open what the reader opened.
	const open = new Set([...list.querySelectorAll('li.chain details[open]')].map((d) => d.closest('li.chain').dataset.chain));
	list.replaceChildren(...r.chains.map(chain));
	for (const li of list.querySelectorAll('li.chain')) {
		if (open.has(li.dataset.chain)) li.querySelector('details').open = true;
	}
	partCounts(r.parts || {});
	box.hidden = false;
}

async function refresh() {
	try {
		const res = await fetch(`/feeds/${encodeURIComponent(box.dataset.feed)}/chains`, { cache: 'no-store' });
		if (res.ok) render(await res.json());
		else if (res.status === 404) box.querySelector('[data-chains-status]').textContent = 'No journal is attached: attach a kubelet\'s journal (syncloop relay) to see its volumes here.';
		box.hidden = false;
	} catch {
		// the next refresh tries again
	}
}

if (box) {
	refresh();
	setInterval(() => {
		if (!document.hidden) refresh();
	}, EVERY);
}
