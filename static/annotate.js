// annotate.js: what the reader writes. Beside each case, the reader's own
// note ([data-annotate="{key}"], Markdown); below the two sets, the
// worksheet's other answers (the writer of each channel, where the two sets
// are declared, the one sentence); on any line or range selected by its
// line numbers (#L…-L…), a comment shown in the margin beside those lines
// (comments.js). Quiz mode, which hides the site's notes until the reader
// wrote theirs, is quiz.js.
//
// Where they are kept is the notes' store (notes-store.js): this browser
// alone, the room's in a room, with the same methods. Every edit names the
// revision it started from, and an edit that crossed another reader's gets
// "changed by Dana meanwhile — merge" instead of losing text.
//
// Whatever a reader wrote reaches other pages as text (textContent), or as
// the server's safe-mode Markdown HTML; never as markup of its own.
//
// The selection a comment is on is the page's one selection (selection.js).

import { announce, el } from './dom.js';
import { lineComments } from './comments.js';
import { colorClass, readerColor, readerName, setReaderName } from './identity.js';
import { downloadWorksheet, openNotes } from './notes-store.js';
import { refreshPaper } from './print.js';
import { quizMode } from './quiz.js';
import { onSelect } from './selection.js';

const live = document.getElementById('live');
const tag = live?.dataset.tag || '';
const kept = openNotes(tag); // where the notes are kept
const caseEls = [...document.querySelectorAll('section.case[data-case]')];
const SAVE_DELAY = 350; // ms after the last keystroke; a peer sees it well within a second

const notes = new Map(); // id → view {id, text, rev, author, color, quote, html, checks, anchor, prev}
// id → the editor of a note: its elements, and where its text stands:
// base, the revision it was last in step with; synced, the text the server
// holds at base (the box holds unsaved text when it differs); saving, a
// write on its way; pending, another's change that came meanwhile; theirs,
// the other's version while the merge prompt is open.
const editors = new Map();
let readOnly = false;
let readOnlyText = ''; // why, said beside each editor (sayReadOnly)

// --- small helpers ---
function me() {
	return {
		author: readerName() || kept.words.author,
		color: readerColor(),
	};
}
function unsaved(ed) {
	return ed.input.value !== ed.synced;
}

// --- the editors --------------------------------------------------------------

// field makes an editor for note id: a textarea (or an input), its rendered
// view, the checks the source makes of it, and who changed it last.
function field(id, { label, multiline = true, placeholder = '', attr = null }) {
	const box = el('div', 'annot-field');
	box.dataset.annotField = id;
	const lab = el('label', 'annot-label');
	const span = el('span', 'annot-label-text', label);
	lab.append(span);
	const input = el(multiline ? 'textarea' : 'input', 'annot-input');
	if (multiline) input.rows = 3;
	else input.type = 'text';
	input.placeholder = placeholder;
	input.spellcheck = multiline;
	input.maxLength = 8192;
	input.readOnly = readOnly;
	if (attr) input.setAttribute(attr[0], attr[1]);
	input.dataset.noteId = id;
	lab.append(input);
	const view = el('div', 'annot-view prose');
	view.hidden = true;
	const by = el('p', 'annot-by');
	const checks = el('ul', 'annot-checks');
	const conflict = el('div', 'annot-conflict');
	conflict.hidden = true;
	conflict.setAttribute('role', 'alert');
	const paper = el('div', 'annot-print-text'); // the text on paper (annotate.css)
	box.append(lab, view, paper, conflict, checks, by);
	const ed = { input, view, paper, by, checks, conflict, box, label: span, base: 0, synced: '', timer: 0, saving: false, pending: null, theirs: null };
	editors.set(id, ed);
	if (readOnly) sayReadOnly(ed);
	input.addEventListener('input', () => {
		paper.textContent = input.value;
		// "still empty" is stale from the first letter; the source's other
		// checks come back with the save.
		for (const li of checks.querySelectorAll('.empty')) if (input.value.trim()) li.remove();
		if (id.startsWith('case.')) quizState(id.slice(5));
		sheetQuizState();
		clearTimeout(ed.timer);
		kept.keepDraft(id, input.value, ed.base);
		if (ed.theirs) {
			// The merge prompt is open: it shows this text as it is typed,
			// and nothing is saved until the reader chooses.
			const m = conflict.querySelector('.annot-mine');
			if (m) m.textContent = input.value || '(empty)';
			return;
		}
		ed.timer = setTimeout(() => save(id), SAVE_DELAY);
	});
	input.addEventListener('blur', () => {
		if (unsaved(ed) && !ed.theirs) {
			clearTimeout(ed.timer);
			save(id);
		}
	});
	return box;
}

// show puts a note's view into its editor, unless the editor holds text
// the reader has not saved (or is saving, or merging): their text is never
// replaced; what came in meets it at the save, or in the merge prompt.
function show(v) {
	if (v.id.startsWith('comment.')) {
		// A write's answer can come after the live event of a later write:
		// the older version does not replace the newer.
		if ((notes.get(v.id)?.rev || 0) > (v.rev || 0)) return;
		notes.set(v.id, v);
		placeComment(v);
		return;
	}
	notes.set(v.id, v);
	const ed = editors.get(v.id);
	if (!ed) return;
	if (!unsaved(ed) && !ed.saving && !ed.theirs) {
		if (ed.input.value !== (v.text || '')) ed.input.value = v.text || '';
		ed.synced = ed.input.value;
		ed.base = v.rev || 0;
	}
	ed.paper.textContent = ed.input.value;
	ed.view.replaceChildren();
	ed.view.hidden = true;
	if (v.html && v.text && ed.input.value === v.text) {
		// Safe-mode Markdown from the server: no raw HTML, no javascript:
		// links. Shown under the box only when it formats something: plain
		// paragraphs would only repeat the box.
		ed.view.innerHTML = v.html;
		ed.view.hidden = !ed.view.querySelector(':not(p)');
	}
	if (!ed.theirs) showBy(ed.by, v);
	// Checks of an older text: "still empty" is wrong once the box is not.
	showChecks(ed.checks, ed.input.value.trim() ? (v.checks || []).filter((c) => c.level !== 'empty') : v.checks);
	if (v.id.startsWith('case.')) quizState(v.id.slice(5));
	sheetQuizState();
}

// remote takes another reader's version of a note (a live event, or a
// snapshot after a reconnect) into its editor.
function remote(v) {
	const ed = editors.get(v.id);
	if (!ed) {
		show(v);
		return;
	}
	if ((v.rev || 0) <= ed.base) {
		// Our own write coming back, older news, or a note not yet written.
		if (!unsaved(ed) && !ed.saving && !ed.theirs) show(v);
		else notes.set(v.id, v);
		return;
	}
	if (ed.saving) {
		ed.pending = v; // the write will meet it, or it came after the write
		notes.set(v.id, v);
		return;
	}
	if (ed.theirs) {
		conflict(v.id, v); // the prompt shows their newest text
		return;
	}
	if (!unsaved(ed) || ed.input.value === (v.text || '')) {
		clearTimeout(ed.timer);
		if (ed.input.value !== (v.text || '')) ed.input.value = v.text || '';
		ed.synced = ed.input.value;
		ed.base = v.rev || 0;
		kept.dropDraft(v.id);
		show(v);
		return;
	}
	// The reader has unsaved text here, and someone else changed the note.
	conflict(v.id, v);
}

function showBy(p, v) {
	p.replaceChildren(...kept.byline(v));
}

function showChecks(ul, checks) {
	ul.replaceChildren();
	for (const c of checks || []) {
		const li = el('li', 'annot-check ' + c.level, c.text);
		ul.append(li);
	}
}

// --- saving ---------------------------------------------------------------------

// save writes a note's text to the store, compare-and-set from the
// revision the editor is in step with. keepalive lets the write outlive the
// page (pagehide).
async function save(id, keepalive = false) {
	const ed = editors.get(id);
	if (ed?.theirs) return; // never while the merge prompt is open
	const text = ed ? ed.input.value : notes.get(id)?.text || '';
	if (readOnly) return;
	if (ed?.saving) {
		// One write at a time: the next goes from the revision this one makes.
		clearTimeout(ed.timer);
		ed.timer = setTimeout(() => save(id), SAVE_DELAY);
		return;
	}
	if (ed) {
		clearTimeout(ed.timer);
		ed.saving = true;
	}
	const base = ed ? ed.base : notes.get(id)?.rev || 0;
	const r = await kept.save(id, text, base, me(), keepalive);
	if (ed) ed.saving = false;
	if (r.status === 'offline') {
		if (ed) ed.timer = setTimeout(() => save(id), 2000);
		status('Offline: your text is kept here and sent when the server answers.');
		return;
	}
	const pending = ed?.pending;
	if (ed) ed.pending = null;
	if (r.status === 'conflict' && ed) {
		conflict(id, r.current, r.error);
		return;
	}
	if (r.status === 'saved' || r.status === 'conflict') {
		if (!ed) {
			if (r.view) show(r.view);
			return;
		}
		if (r.view) ed.base = r.view.rev;
		ed.synced = text;
		status('');
		if (ed.input.value !== text) {
			// typed on while it was saved: save again from the new revision
			if (r.view) notes.set(id, r.view);
			ed.timer = setTimeout(() => save(id), SAVE_DELAY);
		} else {
			kept.dropDraft(id);
			if (r.view) show(r.view);
		}
		if (pending && pending.rev > ed.base) remote(pending); // written after ours
		return;
	}
	if (r.status === 'gone') {
		goReadOnly(r.error);
		return;
	}
	if (r.status === 'busy' && ed) {
		// A limit (quiz mode's checks a minute says so): tried again.
		if (r.error) status(r.error);
		ed.timer = setTimeout(() => save(id), 2000);
		return;
	}
	status(r.error);
}

// conflict opens (or brings up to date) the merge prompt of note id: the
// other's version beside the reader's own text, which stays in the box and
// is followed as it is typed. Nothing is saved until the reader chooses,
// and the choice is saved compare-and-set from their version: a third
// change meanwhile brings the prompt back.
function conflict(id, theirs, msg) {
	const ed = editors.get(id);
	if (!ed) return;
	notes.set(id, theirs);
	ed.base = theirs.rev || 0;
	clearTimeout(ed.timer);
	const t = theirs.text || '';
	if (ed.input.value === t) {
		// The same text: nothing to merge.
		ed.theirs = null;
		ed.synced = t;
		ed.conflict.hidden = true;
		ed.conflict.replaceChildren();
		kept.dropDraft(id);
		show(theirs);
		return;
	}
	const first = !ed.theirs;
	ed.theirs = theirs;
	kept.keepDraft(id, ed.input.value, ed.base);
	showBy(ed.by, theirs);
	const c = ed.conflict;
	c.replaceChildren();
	c.hidden = false;
	const who = () => el('strong', 'annot-author ' + colorClass(theirs.color), theirs.author || 'someone');
	const head = el('p', 'annot-conflict-head');
	head.append('Changed by ', who(), ' meanwhile — merge. Nothing is saved until you choose.');
	const cols = el('div', 'annot-conflict-texts');
	const th = el('div', 'annot-conflict-text');
	const thHead = el('p', 'annot-conflict-who');
	thHead.append('Theirs (', who(), ')');
	th.append(thHead, el('pre', 'annot-theirs', t || '(they emptied it)'));
	const mi = el('div', 'annot-conflict-text');
	mi.append(el('p', 'annot-conflict-who', 'Yours (the box above, not saved)'), el('pre', 'annot-mine', ed.input.value || '(empty)'));
	cols.append(th, mi);
	const row = el('p', 'annot-conflict-actions');
	for (const [k, label] of [
		['both', 'Keep both'],
		['mine', 'Keep mine'],
		['theirs', 'Take theirs'],
	]) {
		const b = el('button', '', label);
		b.type = 'button';
		b.dataset.merge = k;
		row.append(b);
	}
	c.append(head, cols, row);
	row.addEventListener('click', (ev) => {
		const b = ev.target.closest('button');
		if (!b || ed.theirs !== theirs) return;
		const mine = ed.input.value; // as it is now, not as it was
		if (b.dataset.merge === 'both') ed.input.value = !t || mine === t ? mine || t : !mine ? t : t + '\n\n' + mine;
		else if (b.dataset.merge === 'theirs') ed.input.value = t;
		ed.paper.textContent = ed.input.value;
		ed.theirs = null;
		c.hidden = true;
		c.replaceChildren();
		if (b.dataset.merge === 'theirs') {
			ed.synced = t;
			kept.dropDraft(id);
			show(theirs);
		} else {
			ed.synced = t; // in step with theirs: the save replaces it
			kept.keepDraft(id, ed.input.value, ed.base);
			save(id);
		}
	});
	if (first) announce(msg || `Changed by ${theirs.author || 'someone'} meanwhile`, 2600);
}

// flush saves what is typed and not yet saved, now: the page is going
// away (pagehide), or out of sight (and may be closed unseen). In a room
// the write is made keepalive, so that it outlives the page; its draft
// stays in this browser in case it does not land.
function flush() {
	for (const [id, ed] of editors) {
		if (ed.theirs || !unsaved(ed)) continue;
		clearTimeout(ed.timer);
		if (!ed.saving) save(id, true);
	}
}

// goReadOnly: the notes' store says they are read-only. A room that was
// ended, or an instructor watching one (room.js), is read-only while the
// server keeps its notes: keep says the worksheet's download stays the
// server's. A room gone from the server (!keep) leaves what the page holds.
function goReadOnly(msg, keep = false) {
	if (readOnly) return;
	readOnly = true;
	kept.freeze();
	document.body.classList.add('annot-readonly');
	const text = keep && msg ? msg : 'This room has ended; notes are read-only. They are gone from the server: download the worksheet to keep what this page shows.';
	readOnlyText = msg && !/^this room expired/i.test(msg) ? msg : text;
	for (const ed of editors.values()) {
		ed.input.readOnly = true;
		clearTimeout(ed.timer);
		sayReadOnly(ed);
	}
	for (const f of document.querySelectorAll('form.annot-new')) f.remove();
	updateBar();
	// The room's worksheet is gone with it: the download is made from
	// what this page holds.
	// (Only a room's notes are ever gone: those kept alone stay.)
	const dl = document.querySelector('[data-annot-export]');
	if (dl && !keep) {
		dl.removeAttribute('href');
		dl.setAttribute('role', 'button');
		dl.tabIndex = 0;
		dl.addEventListener('click', (ev) => {
			ev.preventDefault();
			const list = [...notes.values()].filter((v) => v.text).map(({ id, text, author, quote, at }) => ({ id, text, author, quote, at }));
			for (const [id, ed] of editors) {
				const i = list.findIndex((v) => v.id === id);
				if (ed.input.value && i < 0) list.push({ id, text: ed.input.value, author: me().author });
				else if (i >= 0) list[i].text = ed.input.value || list[i].text;
			}
			downloadWorksheet(tag, list, kept.sheetName());
		});
	}
	status(msg && !/^this room expired/i.test(msg) ? msg : text);
	if (keep) return; // the room lives: its notes' events go on
	const banner = el('p', 'annot-ended', text);
	banner.dataset.annotEnded = '';
	banner.setAttribute('role', 'status');
	document.querySelector('article.text')?.prepend(banner);
	kept.stop();
}

// sayReadOnly says beside ed why the notes are read-only (readOnlyText):
// on a phone the room's banner is out of view where a reader types.
function sayReadOnly(ed) {
	if (ed.box.querySelector(':scope > [data-annot-readonly]')) return;
	const p = el('p', 'annot-ro', readOnlyText);
	p.dataset.annotReadonly = '';
	p.id = 'annot-ro-' + ed.input.dataset.noteId;
	ed.input.setAttribute('aria-describedby', p.id);
	ed.box.querySelector('.annot-label').after(p);
}

function status(text) {
	const s = document.querySelector('[data-annot-status]');
	if (s) {
		s.textContent = text;
		s.hidden = !text;
	}
}

// --- the notes as the store hands them in -------------------------------------

// rendered: the server's rendering of the notes this browser keeps (alone),
// all of them: a comment not among them was deleted (in another tab).
function rendered(views) {
	const seen = new Set();
	for (const v of views) {
		seen.add(v.id);
		show(v);
	}
	for (const id of [...notes.keys()]) {
		if (!seen.has(id) && id.startsWith('comment.')) removeComment(id);
	}
}

// snapshot: a room's notes, all of them, on every (re)connection. The
// first restores this browser's drafts: text typed here last time and not
// known to have landed.
let snapshotted = false;
function snapshot(views) {
	const seen = new Set();
	for (const v of views) {
		seen.add(v.id);
		const ed = editors.get(v.id);
		const d = !snapshotted && ed && kept.draftOf(v.id);
		if (d && d.text !== (v.text || '')) {
			ed.input.value = d.text;
			ed.paper.textContent = d.text;
			if ((v.rev || 0) === d.base) {
				ed.synced = v.text || '';
				ed.base = v.rev || 0;
				show(v);
				ed.timer = setTimeout(() => save(v.id), SAVE_DELAY);
			} else conflict(v.id, v);
			continue;
		}
		if (d) kept.dropDraft(v.id);
		remote(v);
	}
	snapshotted = true;
	for (const id of [...notes.keys()]) {
		if (!seen.has(id) && id.startsWith('comment.')) removeComment(id);
	}
	document.body.classList.add('annot-live');
}

// --- comments on lines (comments.js) -------------------------------------------------

const { bar, placeComment, removeComment, selection, updateBar, alignSoon } = lineComments({
	tag,
	kept,
	notes,
	me,
	show,
	goReadOnly,
	isReadOnly: () => readOnly,
});

// --- quiz mode (quiz.js) ------------------------------------------------------------

const { quizWanted, reveal: revealNote, quizState, sheetQuizState, quizPlaceholder, setQuiz, PW_QUESTION, SET_LABELS } = quizMode({
	tag,
	caseEls,
	editors,
	alignSoon,
});

// --- hand-in ------------------------------------------------------------------------

// printAs prints the page with body.cls (annotate.css): "annot-print" puts
// only the reader's notes beside the code, "annot-print-sheet" prints the
// worksheet alone. Either begins with whose it is and ends with the pins
// (print.js), as the server has them now.
async function printAs(cls) {
	document.body.classList.add(cls);
	await refreshPaper(kept);
	window.print();
}
window.addEventListener('afterprint', () => document.body.classList.remove('annot-print', 'annot-print-sheet'));

// --- building the page -----------------------------------------------------------

function build() {
	for (const sec of caseEls) {
		const key = sec.dataset.case;
		const margin = sec.querySelector(':scope > .margin');
		const box = el('div', 'annot-case');
		box.append(
			field('case.' + key, {
				label: kept.words.note,
				placeholder: 'In your words: what flows here, who writes it, what the handler does with a pod it has never seen (Markdown)',
				attr: ['data-annotate', key],
			}),
		);
		const reveal = el('button', 'annot-reveal');
		reveal.type = 'button';
		reveal.dataset.annotReveal = key;
		reveal.hidden = true;
		reveal.addEventListener('click', () => {
			revealNote(key);
			quizState(key);
		});
		box.append(reveal);
		// The reader's note goes first: in quiz mode it stands where the
		// site's note will be, and beside it once revealed.
		const facts = margin.querySelector('dl.facts');
		(facts || margin.firstElementChild).after(box);
	}

	const sheet = el('section', 'annot-sheet');
	sheet.id = 'your-worksheet';
	sheet.setAttribute('aria-labelledby', 'your-worksheet-h');
	const h = el('h2', '', kept.words.sheet);
	h.id = 'your-worksheet-h';
	const where = el('p', 'annot-where', kept.words.where);
	const tools = el('p', 'annot-tools');
	const name = el('label', 'annot-name');
	name.append('Your name ');
	const nameIn = el('input');
	nameIn.type = 'text';
	nameIn.maxLength = 32;
	nameIn.value = readerName();
	nameIn.placeholder = 'shown with what you write';
	nameIn.autocomplete = 'nickname';
	nameIn.addEventListener('change', () => setReaderName(nameIn.value));
	name.append(nameIn);
	const quiz = el('label', 'annot-quiz-toggle');
	const quizIn = el('input');
	quizIn.type = 'checkbox';
	quizIn.dataset.annotQuiz = '';
	quizIn.checked = quizWanted();
	quizIn.addEventListener('change', () => setQuiz(quizIn.checked));
	quiz.append(quizIn, " Quiz mode: hide the site's notes until I have written mine");
	const dl = kept.download();
	dl.dataset.annotExport = '';
	const pr = el('button', 'annot-print-btn', 'Print with my annotation');
	pr.type = 'button';
	pr.addEventListener('click', () => printAs('annot-print'));
	const ps = el('button', 'annot-print-sheet-btn', 'Print the worksheet');
	ps.type = 'button';
	ps.addEventListener('click', () => printAs('annot-print-sheet'));
	tools.append(name, quiz, dl, pr, ps);
	const st = el('p', 'annot-status');
	st.dataset.annotStatus = '';
	st.hidden = true;
	st.setAttribute('role', 'status');

	const writers = el('div', 'annot-writers');
	writers.append(el('h3', '', 'Who writes each channel'));
	for (const sec of caseEls) {
		const key = sec.dataset.case;
		const ch = sec.querySelector('dl.facts dd code')?.textContent || key;
		writers.append(field('writer.' + key, { label: `${key} (${ch})`, multiline: false, placeholder: 'a symbol, as pkg/path.(*Type).Method, or words' }));
	}
	// The exercise, whole: which exercise fired each channel (the "Fired"
	// evidence backs it), and the pod_workers question.
	const exercises = el('div', 'annot-writers annot-exercises');
	exercises.append(el('h3', '', 'Match each channel to an exercise that fired it'));
	for (const sec of caseEls) {
		const key = sec.dataset.case;
		const ch = sec.querySelector('dl.facts dd code')?.textContent || key;
		exercises.append(field('exercise.' + key, { label: `${key} (${ch})`, multiline: false, placeholder: 'what you did that fired it, e.g. a pod whose liveness probe fails' }));
	}
	const pw = el('div', 'annot-podworkers');
	pw.id = 'annot-podworkers';
	const pwh = el('h3');
	const pwa = el('a', '', 'pod_workers');
	pwa.href = kept.podWorkers;
	pwh.append(pwa);
	pw.append(
		pwh,
		quizPlaceholder('pod-workers', '', "Quiz mode: the pod_workers page's note, which answers this question, is hidden until you have written your answer."),
		field('podworkers', { label: PW_QUESTION, placeholder: 'In your words, from the type comments of pod_workers.go (Markdown)' }),
	);
	const sets = el('div', 'annot-sets');
	sets.append(el('h3', '', 'The two sets'));
	sets.append(field('set.desired', { label: SET_LABELS['set.desired'][0], multiline: false, placeholder: 'file.go:line' }));
	sets.append(field('set.actual', { label: SET_LABELS['set.actual'][0], multiline: false, placeholder: 'file.go:line' }));
	const sentence = el('div', 'annot-sentence');
	sentence.append(el('h3', '', 'The pattern, in one sentence'));
	sentence.append(field('sentence', { label: 'How does the loop make level-triggered reconcile?', placeholder: 'One sentence connecting the select to “compare desired with actual, close the gap”' }));
	const orphans = el('div', 'annot-orphans');
	orphans.hidden = true;
	orphans.append(el('h3', '', 'Comments not at this tag'));
	const ol = el('div', 'annot-orphan-list');
	ol.dataset.annotOrphans = '';
	orphans.append(ol);
	sheet.append(h, where, tools, st, writers, exercises, pw, sets, sentence, orphans);
	const after = document.getElementById('two-sets');
	after?.prepend(
		quizPlaceholder('two-sets', 'The two sets', "Quiz mode: the site's answer (both sets' names, and where they are declared) is hidden until you have written yours below."),
	);
	document
		.querySelector('section.intro > .prose')
		?.before(quizPlaceholder('intro', '', "Quiz mode: the site's introduction, which says what the pattern is, is hidden until you have written your sentence in the worksheet."));
	if (after) after.after(sheet);
	else document.querySelector('article.text')?.append(sheet);

	document.body.append(bar);
	document.body.classList.add('annot-on');
	setQuiz(quizIn.checked);
}

if (tag && caseEls.length) {
	build();
	kept.start({ rendered, snapshot, note: remote, deleted: removeComment, gone: goReadOnly });
	// For a print the browser's menu starts, a room's paper is there
	// already; a reader's own is asked for by the print buttons (asking
	// now would race the render of the notes, one at a time a reader).
	if (kept.room) refreshPaper(kept);
	onSelect(updateBar);
	updateBar();
	// A reader who closes the tab right after typing keeps the text.
	window.addEventListener('pagehide', flush);
	document.addEventListener('visibilitychange', () => {
		if (document.visibilityState === 'hidden') flush();
	});
}
