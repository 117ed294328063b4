// print.js: what paper says that the screen does not. A printed worksheet
// or annotation begins as worksheet.md does (its heading with the tag,
// which room of which class, the readers, who wrote) and ends with its
// "Fired" section, each pinned line as the journal stores it. The server
// makes both (GET /rooms/{id}/worksheet.json, POST /k8s/{tag}/worksheet.json
// with a reader's own notes); they are set here as text, and shown on
// paper alone (annotate.css).

import { el } from './dom.js';

// paperParts are the head and the Fired section, made once.
let parts = null;
function paperParts() {
	if (parts) return parts;
	const head = el('header', 'annot-paper annot-paper-head');
	head.id = 'paper-head';
	const fired = el('section', 'annot-paper annot-paper-fired');
	fired.id = 'paper-fired';
	document.querySelector('article.text')?.prepend(head);
	(document.getElementById('your-worksheet') || document.querySelector('article.text'))?.append(fired);
	parts = { head, fired };
	return parts;
}

// fill sets paper p (the server's JSON) as text.
function fill(p) {
	const { head, fired } = paperParts();
	const lines = [el('h1', '', p.heading), el('p', 'annot-paper-title', p.title)];
	if (p.readers?.length) lines.push(el('p', 'annot-paper-readers', 'Readers: ' + p.readers.join(', ')));
	lines.push(el('p', 'annot-paper-authors', 'Written by: ' + (p.authors?.length ? p.authors.join(', ') : 'nobody yet')));
	head.replaceChildren(...lines);
	if (!p.fired?.length) {
		fired.replaceChildren();
		return;
	}
	const out = [el('h2', '', 'Fired'), el('p', '', p.intro)];
	for (const pin of p.fired) {
		out.push(el('h3', '', pin.heading), el('p', 'annot-paper-place', pin.place));
		if (pin.line) out.push(el('pre', 'annot-paper-line', pin.line));
	}
	fired.replaceChildren(...out);
}

// refreshPaper asks the server for the paper of the notes kept (the
// store's paper()) and sets it; what was set before stays if it cannot.
export async function refreshPaper(kept) {
	try {
		const r = await kept.paper();
		if (r && r.ok) fill(await r.json());
	} catch {
		// printed with what the page had
	}
}
