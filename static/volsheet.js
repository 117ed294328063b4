// volsheet.js: the second reading's worksheet in a room (section#worksheet
// of a volume room's page, server/annotations/volume.go): each answer is a
// note of the room's, kept and shared as the first reading's are
// (notes-store.js: compare-and-set, live for every reader), saved a moment
// after the reader stops typing and when they leave the field, with what
// the server's checker says under it.
//
// "Print the worksheet" prints the sheet alone (volume.css), each answer
// as text, headed as worksheet.md is (GET /rooms/{id}/worksheet.json).
//
// Text is the readers': it only ever reaches the page as a textarea's
// value or through textContent.

import { announce, el } from './dom.js';
import { openNotes } from './notes-store.js';

const SAVE_AFTER = 800; // ms of no typing before an answer is saved

const sheet = document.getElementById('worksheet');
const fields = new Map(); // note id → its textarea
const rev = new Map(); // note id → the revision the field's text started from
const status = sheet?.querySelector('[data-vm-status]');

function say(text) {
	if (status) status.textContent = text;
}

// showChecks writes what the checker says about an answer under it.
function showChecks(id, checks) {
	const ul = sheet.querySelector(`[data-vm-checks="${CSS.escape(id)}"]`);
	if (!ul) return;
	ul.replaceChildren(...(checks || []).filter((c) => c.level !== 'empty').map((c) => el('li', 'vm-check vm-check-' + c.level, c.text)));
}

// show puts a view of the room's into its field, unless the reader is
// typing there (their text is saved over it, compare-and-set).
function show(v) {
	const ta = fields.get(v.id);
	if (!ta) return;
	rev.set(v.id, v.rev || 0);
	if (document.activeElement !== ta || !ta.dataset.dirty) ta.value = v.text || '';
	showChecks(v.id, v.checks);
}

async function save(ta) {
	const id = ta.dataset.vmNote;
	clearTimeout(ta.saveTimer);
	if (!ta.dataset.dirty) return;
	delete ta.dataset.dirty;
	const res = await notes.save(id, ta.value, rev.get(id) || 0, { color: 0 });
	switch (res.status) {
	case 'saved':
		if (res.view?.id) show(res.view);
		say('Saved.');
		break;
	case 'conflict':
		show(res.current);
		ta.value = res.current.text || '';
		announce(`${res.error || 'Changed meanwhile'}: their text is shown; write yours again if it should stay.`, 4000);
		break;
	case 'busy':
		ta.dataset.dirty = '1';
		ta.saveTimer = setTimeout(() => save(ta), 2000);
		say(res.error || 'The server is busy: saving again in a moment.');
		break;
	default:
		ta.dataset.dirty = '1';
		say(res.error || 'Could not save: your text stays here.');
	}
}

// paper sets what printing shows: the heading, and each answer as text.
async function paper() {
	let head = document.getElementById('paper-head');
	if (!head) {
		head = el('header', 'vm-paper-head');
		head.id = 'paper-head';
		sheet.prepend(head);
	}
	try {
		const r = await fetch(`/rooms/${encodeURIComponent(sheet.dataset.room)}/worksheet.json`, { cache: 'no-store' });
		if (r.ok) {
			const p = await r.json();
			const lines = [el('h1', '', p.heading), el('p', '', p.title)];
			if (p.readers?.length) lines.push(el('p', '', 'Readers: ' + p.readers.join(', ')));
			lines.push(el('p', '', 'Written by: ' + (p.authors?.length ? p.authors.join(', ') : 'nobody yet')));
			head.replaceChildren(...lines);
		}
	} catch {
		// printed with what the page had
	}
	for (const ta of fields.values()) {
		let text = ta.nextElementSibling;
		if (!text?.classList.contains('vm-print-text')) {
			text = el('div', 'vm-print-text');
			ta.after(text);
		}
		text.textContent = ta.value.trim() || '(left empty)';
	}
}

const notes = sheet ? openNotes(sheet.dataset.tag || '') : null;
if (sheet && notes) {
	for (const ta of sheet.querySelectorAll('textarea[data-vm-note]')) {
		fields.set(ta.dataset.vmNote, ta);
		ta.addEventListener('input', () => {
			ta.dataset.dirty = '1';
			clearTimeout(ta.saveTimer);
			ta.saveTimer = setTimeout(() => save(ta), SAVE_AFTER);
		});
		ta.addEventListener('blur', () => save(ta));
	}
	const readOnly = (why) => {
		for (const ta of fields.values()) ta.disabled = true;
		say(why || "This room's notes are read-only.");
	};
	sheet.querySelector('[data-vm-print]')?.addEventListener('click', async () => {
		await paper();
		document.body.classList.add('vm-print-sheet');
		window.print();
	});
	window.addEventListener('beforeprint', () => paper());
	window.addEventListener('afterprint', () => document.body.classList.remove('vm-print-sheet'));
	notes.start({
		snapshot(views) {
			for (const v of views) show(v);
			if (!notes.frozen) for (const ta of fields.values()) ta.disabled = false;
			say('');
		},
		note: show,
		deleted() {},
		rendered() {},
		gone: readOnly,
	});
}
