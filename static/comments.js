// comments.js: comments on lines. On any line or range selected by its line
// numbers (#L…-L…), a reader comments; the comment is shown in the margin
// beside those lines (after a helper's code, for a line inside it), with
// its replies as a thread, and follows the source across tags by its quote
// (moved, changed, or not at this tag). A bar under the selection offers
// "Comment". Comments are notes (notes-store.js) like any other.
//
// lineComments takes what annotate.js owns: the page's tag, the notes'
// store (kept) and its views by id (notes), who the reader is (me), how a
// stored note is shown (show), how the page goes read-only (goReadOnly)
// and whether it is (isReadOnly).

import { announce, el, lineEl } from './dom.js';
import { colorClass } from './identity.js';
import { current } from './selection.js';

export function lineComments({ tag, kept, notes, me, show, goReadOnly, isReadOnly }) {
	// marginFor is where a comment on line n is shown: the margin of the
	// segment holding the line, or after a helper's code.
	function marginFor(n) {
		const line = lineEl(n);
		if (!line) return null;
		const seg = line.closest('.seg');
		if (seg) {
			const m = seg.querySelector(':scope > .margin');
			let list = m.querySelector(':scope > .annot-comments');
			if (!list) {
				list = el('div', 'annot-comments');
				// In a case, right under the reader's note: near the top of the
				// case, not below the site's long note.
				const mine = m.querySelector(':scope > .annot-case');
				if (mine) mine.after(list);
				else m.append(list);
			}
			seg.classList.add('has-comments');
			if (sizes) for (const e of seg.querySelectorAll(':scope > pre.code, :scope > .margin > .annot-case')) sizes.observe(e);
			return list;
		}
		const helper = line.closest('details.helper');
		if (helper) {
			let list = helper.querySelector(':scope > .annot-comments');
			if (!list) {
				list = el('div', 'annot-comments');
				helper.append(list);
			}
			return list;
		}
		return null;
	}

	function removeComment(id) {
		notes.delete(id);
		for (const c of document.querySelectorAll('[data-comment]')) if (c.dataset.comment === id) c.remove();
		markLines();
	}

	function placeComment(v) {
		let editing = null; // an edit open on this comment stays open, text and all
		for (const c of document.querySelectorAll('[data-comment]')) {
			if (c.dataset.comment !== v.id) continue;
			editing ||= c.querySelector(':scope > form.annot-edit');
			c.remove();
		}
		const a = v.anchor || { status: 'orphan' };
		const card = el('article', 'annot-comment ' + a.status);
		card.dataset.comment = v.id;
		if (a.status !== 'orphan') {
			card.dataset.start = a.start;
			card.dataset.end = a.end;
		}
		card.dataset.at = v.created || v.at || ''; // a thread is in the order written, not edited
		const head = el('p', 'annot-comment-head');
		const q = v.quote || {};
		if (a.status !== 'orphan') {
			const link = el('a', 'annot-lines', a.start === a.end ? 'L' + a.start : `L${a.start}–${a.end}`);
			link.href = a.start === a.end ? '#L' + a.start : `#L${a.start}-L${a.end}`;
			head.append(link);
		}
		const badge = {
			same: '',
			moved: q.tag && q.tag !== tag ? `moved: line ${q.start} at ${q.tag}` : '',
			changed: `changed since ${q.tag} (line ${q.start} there)`,
			orphan: `not at this tag (written at ${q.tag}, line ${q.start})`,
		}[a.status];
		if (badge) head.append(' ', el('span', 'annot-badge ' + a.status, badge));
		const who = kept.signature(v);
		if (who) head.append(' ', who);
		const acts = el('span', 'annot-comment-acts');
		const button = (label, title, fn, data) => {
			const b = el('button', 'annot-act', label);
			b.type = 'button';
			b.title = title;
			b.dataset[data] = '';
			b.addEventListener('click', fn);
			acts.append(b);
		};
		if (a.status !== 'orphan') button('reply', 'Reply: a comment on the same lines', () => replyTo(card, a), 'annotReply');
		button('edit', 'Edit this comment', () => editComment(card, v.id), 'annotEdit');
		button('delete', 'Delete this comment', () => deleteComment(v.id), 'annotDelete');
		head.append(' ', acts);
		card.append(head);
		if (a.status === 'changed' || a.status === 'orphan') {
			const was = el('pre', 'annot-quote', dedent(q.exact || ''));
			was.title = 'The lines as they were at ' + q.tag;
			card.append(was);
		}
		const body = el('div', 'annot-comment-body prose');
		body.innerHTML = v.html || ''; // safe-mode Markdown from the server
		card.append(body);
		if (editing) {
			card.append(editing);
			if (Number(editing.dataset.rev) !== (v.rev || 0)) editChanged(editing, v);
		}
		const list = a.status === 'orphan' ? document.querySelector('[data-annot-orphans]') : marginFor(a.start);
		const into = list || document.querySelector('[data-annot-orphans]');
		if (into) {
			// In line order; on the same lines, a thread in the order written.
			const key = (c) => [Number(c.dataset.start || 1e9), c.dataset.at || ''];
			const [ks, kt] = key(card);
			const next = [...into.querySelectorAll(':scope > .annot-comment')].find((c) => {
				const [s2, t2] = key(c);
				return s2 > ks || (s2 === ks && t2 > kt);
			});
			into.insertBefore(card, next || into.querySelector(':scope > form.annot-new'));
			threads(into);
		}
		const orphans = document.querySelector('[data-annot-orphans]');
		if (orphans) orphans.closest('.annot-orphans').hidden = !orphans.children.length;
		markLines();
		alignSoon();
	}

	// threads marks the comments that answer the one before them: on the
	// same lines.
	function threads(list) {
		let prev = null;
		for (const c of list.querySelectorAll(':scope > .annot-comment')) {
			const reply = !!prev && !!c.dataset.start && prev.dataset.start === c.dataset.start && prev.dataset.end === c.dataset.end;
			c.classList.toggle('annot-reply', reply);
			prev = c;
		}
	}

	// commentForm is the box a comment is written in: a new one, a reply, an edit.
	function commentForm(cls, label, text, submit, onCancel) {
		const form = el('form', cls);
		const lab = el('label', 'annot-label');
		lab.append(el('span', 'annot-label-text', label));
		const ta = el('textarea', 'annot-input');
		ta.rows = 3;
		ta.maxLength = 8192;
		ta.value = text;
		lab.append(ta);
		const msg = el('p', 'annot-form-msg');
		msg.hidden = true;
		msg.setAttribute('role', 'alert');
		const ok = el('button', '', submit);
		ok.type = 'submit';
		const cancel = el('button', '', 'Cancel');
		cancel.type = 'button';
		const row = el('p', 'annot-conflict-actions');
		row.append(ok, cancel);
		form.append(lab, msg, row);
		cancel.addEventListener('click', () => {
			form.remove();
			onCancel?.();
			updateBar();
			alignSoon();
		});
		return { form, ta, ok, msg };
	}

	function replyTo(card, a) {
		if (isReadOnly() || card.parentElement?.querySelector(':scope > form.annot-new')) return;
		const s = { lo: a.start, hi: a.end };
		// After the thread it answers.
		let last = card;
		while (last.nextElementSibling?.classList.contains('annot-reply')) last = last.nextElementSibling;
		openNewComment('annot-new annot-reply-form', s, 'reply', 'Reply', (f) => last.after(f));
	}

	// openNewComment opens a form for a new comment on lines s (a reply, or
	// one from the selection bar), placed by place; submitting adds the
	// comment and closes the form.
	function openNewComment(cls, s, what, button, place) {
		const { form, ta, ok } = commentForm(cls, s.lo === s.hi ? `Your ${what} on line ${s.lo}` : `Your ${what} on lines ${s.lo}–${s.hi}`, '', button);
		form.dataset.start = s.lo;
		place(form);
		ta.focus();
		updateBar();
		alignSoon();
		form.addEventListener('submit', async (ev) => {
			ev.preventDefault();
			const text = ta.value.trim();
			if (!text) return;
			ok.disabled = true;
			if (await addComment(newID(), text, s)) {
				form.remove();
				updateBar();
			} else ok.disabled = false;
		});
		return form;
	}

	// editComment opens the comment's text for editing, under it. The edit is
	// saved compare-and-set: a change by someone else meanwhile is shown
	// above, and the reader's text stays in the box until they save again.
	function editComment(card, id) {
		const v = notes.get(id);
		if (!v || isReadOnly() || card.querySelector(':scope > form.annot-edit')) return;
		const { form, ta, ok } = commentForm('annot-edit', 'Edit your comment', v.text || '', 'Save');
		form.dataset.rev = v.rev || 0;
		card.append(form);
		ta.focus();
		alignSoon();
		form.addEventListener('submit', async (ev) => {
			ev.preventDefault();
			const text = ta.value.trim();
			if (!text) return;
			ok.disabled = true;
			const done = await saveComment(id, text, Number(form.dataset.rev), form);
			ok.disabled = false;
			if (done) {
				form.remove();
				alignSoon();
			}
		});
	}

	// editChanged says, in an open edit, that the comment changed meanwhile.
	function editChanged(form, cur) {
		form.dataset.rev = cur.rev || 0;
		const msg = form.querySelector('.annot-form-msg');
		msg.replaceChildren('Changed by ', el('strong', 'annot-author ' + colorClass(cur.color), cur.author || 'someone'), ' meanwhile: their text is above, yours stays here. Save to replace theirs with yours.');
		msg.hidden = false;
	}

	async function saveComment(id, text, rev, form) {
		const r = await kept.edit(id, text, rev, me());
		if (r.status === 'offline') {
			announce('Offline: your text stays in the box');
			return false;
		}
		if (r.status === 'conflict') {
			editChanged(form, r.current);
			return false;
		}
		if (r.status === 'saved') {
			if (r.view) show(r.view);
			return true;
		}
		if (r.status === 'gone') goReadOnly(r.error);
		else announce(r.error || 'Could not save the comment');
		return false;
	}

	// alignSoon puts each comment level with its first line, where the margin
	// is beside the code and there is room: never above what precedes it.
	let alignFrame = 0;
	function alignSoon() {
		cancelAnimationFrame(alignFrame);
		alignFrame = requestAnimationFrame(align);
	}
	function align() {
		for (const list of document.querySelectorAll('.seg > .margin > .annot-comments')) {
			const seg = list.closest('.seg');
			const pre = seg.querySelector(':scope > pre.code');
			const items = [...list.children];
			for (const c of items) c.style.marginTop = '';
			if (!pre || pre.getBoundingClientRect().left < list.getBoundingClientRect().right - 1) continue; // not side by side
			// The code starts level with the case's head (or the margin): that
			// is where it is when it is not stuck to the top of the window.
			const ref = seg.querySelector(':scope > .case-head') || seg.querySelector(':scope > .margin');
			const preTop = pre.getBoundingClientRect().top;
			const codeTop = ref.getBoundingClientRect().top;
			for (const c of items) {
				const n = Number(c.dataset.start);
				const line = n && lineEl(n);
				if (!line || c.classList.contains('annot-reply') || c.classList.contains('annot-reply-form')) continue;
				const want = codeTop + (line.getBoundingClientRect().top - preTop);
				const at = c.getBoundingClientRect().top;
				if (want > at + 1) c.style.marginTop = `${want - at + parseFloat(getComputedStyle(c).marginTop)}px`;
			}
		}
	}
	window.addEventListener('resize', alignSoon);
	window.addEventListener('beforeprint', align); // paper's width: now, not at the next frame
	document.fonts?.ready.then(alignSoon);
	const sizes = typeof ResizeObserver === 'function' ? new ResizeObserver(alignSoon) : null;

	// dedent drops the indentation the quoted lines share.
	function dedent(s) {
		const lines = s.split('\n');
		const ind = Math.min(...lines.filter((l) => l.trim()).map((l) => /^[\t ]*/.exec(l)[0].length));
		return lines.map((l) => l.slice(ind)).join('\n');
	}

	// markLines marks the lines that have comments.
	function markLines() {
		for (const l of document.querySelectorAll('.line.commented')) l.classList.remove('commented');
		for (const v of notes.values()) {
			const a = v.anchor;
			if (!v.id.startsWith('comment.') || !a || a.status === 'orphan') continue;
			for (let n = a.start; n <= a.end; n++) lineEl(n)?.classList.add('commented');
		}
	}

	async function deleteComment(id) {
		const v = notes.get(id);
		if (!v || isReadOnly()) return;
		const r = await kept.remove(id, v.rev);
		if (r.status === 'removed') removeComment(id); // (a room's event removes it too)
		else if (r.status === 'gone') goReadOnly();
		else if (r.status === 'changed') announce('Changed meanwhile: look again before deleting');
	}

	function newID() {
		const b = new Uint8Array(9);
		crypto.getRandomValues(b);
		return 'comment.' + btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_');
	}

	// selection is the lines selected on the page (by their numbers, or by the
	// room's driver), if any; a bar offers to comment on them.
	function selection() {
		const s = current();
		if (!s.lo) return null;
		const hi = s.hi || s.lo;
		return lineEl(s.lo) && lineEl(hi) ? { lo: Math.min(s.lo, hi), hi: Math.max(s.lo, hi) } : null;
	}

	const bar = el('div', 'annot-bar');
	bar.hidden = true;
	const barText = el('span', 'annot-bar-text');
	const barBtn = el('button', 'annot-bar-btn', 'Comment');
	barBtn.type = 'button';
	barBtn.dataset.annotComment = '';
	bar.append(barText, barBtn);

	function updateBar() {
		const s = selection();
		const editing = document.querySelector('.annot-new');
		bar.hidden = !s || isReadOnly() || !!editing;
		if (s) barText.textContent = s.lo === s.hi ? `Line ${s.lo}` : `Lines ${s.lo}–${s.hi}`;
	}

	barBtn.addEventListener('click', () => {
		const s = selection();
		const list = s && marginFor(s.lo);
		if (!list) return;
		const form = openNewComment('annot-new', s, 'comment', 'Add comment', (f) => list.append(f));
		form.querySelector('textarea').dataset.annotNewComment = '';
	});

	async function addComment(id, text, s) {
		const r = await kept.add(id, text, s, me());
		if (r.status === 'saved' || r.status === 'conflict') {
			if (r.view) show(r.view);
			return true;
		}
		if (r.status === 'offline') announce('Offline: your comment stays in the box');
		else if (r.status === 'gone') goReadOnly(r.error);
		else announce(r.error || 'Could not add the comment');
		return false;
	}

	return { bar, placeComment, removeComment, selection, updateBar, alignSoon };
}
