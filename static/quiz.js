// quiz.js: quiz mode on a reading's page. The site's notes are hidden
// until the reader wrote theirs: a case's note until the reader's own note
// of the case is written and they ask to compare; the worksheet's answers
// (the two sets, the sentence, the pod_workers question) likewise. What was
// revealed is kept per tag in localStorage ('syncloop-revealed'); the mode
// itself in 'syncloop-quiz'. A class that hides the notes has the server
// leave them out instead (the page then has nothing here to reveal).
//
// quizMode takes what annotate.js owns: the page's tag, its case sections,
// the editors by note id, and alignSoon (the margin's re-layout).

import { el, store, stored } from './dom.js';

export function quizMode({ tag, caseEls, editors, alignSoon }) {
	function quizOn() {
		return document.body.classList.contains('annot-quiz');
	}
	function revealed() {
		try {
			return new Set(JSON.parse(stored('syncloop-revealed', '[]')));
		} catch {
			return new Set();
		}
	}
	// reveal keeps that the site's note or answer key is shown at this tag.
	function reveal(key) {
		const r = revealed();
		r.add(tag + ' ' + key);
		store('syncloop-revealed', JSON.stringify([...r]));
	}
	// quizWanted is whether the reader last turned quiz mode on.
	function quizWanted() {
		return stored('syncloop-quiz', '') === '1';
	}
	function quizState(key) {
		const sec = caseEls.find((c) => c.dataset.case === key);
		if (!sec) return;
		const ed = editors.get('case.' + key);
		const written = !!ed?.input.value.trim();
		const shown = revealed().has(tag + ' ' + key);
		sec.classList.toggle('annot-revealed', shown);
		alignSoon();
		const btn = sec.querySelector('[data-annot-reveal]');
		if (btn) {
			btn.disabled = !written;
			btn.hidden = shown || !quizOn();
			btn.textContent = written ? "Compare with the site's note" : "Write yours first to see the site's note";
		}
	}
	// The page's other answers: the two sets (#two-sets), revealed once both
	// are written, and the introduction, which says the sentence, once the
	// sentence is.
	const SHEET_QUIZ = [
		{ key: 'two-sets', ids: ['set.desired', 'set.actual'], what: 'the two sets' },
		{ key: 'intro', ids: ['sentence'], what: 'the sentence' },
		// on the pod_workers page (quiz-early.js reads what is revealed there)
		{ key: 'pod-workers', ids: ['podworkers'], what: 'your answer' },
	];
	// The exercise's pod_workers question (annotations.PodWorkersQuestion).
	const PW_QUESTION = 'What guarantees that two goroutines never sync the same pod at once?';
	// The set fields' labels: the page's (#two-sets data-label-*, which in
	// quiz mode name no set, so that no script carries the sets' names), and
	// the neutral ones this page's own quiz mode shows until they are revealed.
	const setsSec = document.getElementById('two-sets');
	const serverHidesSets = setsSec?.dataset.hidden !== undefined;
	const SET_LABELS = {
		'set.desired': [setsSec?.dataset.labelDesired || 'One set: its type and file:line', 'One set: its type and file:line'],
		'set.actual': [setsSec?.dataset.labelActual || 'The other set: its type and file:line', 'The other set: its type and file:line'],
	};
	function sheetQuizState() {
		const r = revealed();
		for (const q of SHEET_QUIZ) {
			const sec = document.getElementById({ 'two-sets': 'two-sets', intro: 'intro', 'pod-workers': 'annot-podworkers' }[q.key]);
			if (!sec) continue;
			const written = q.ids.every((id) => editors.get(id)?.input.value.trim());
			const shown = r.has(tag + ' ' + q.key);
			sec.classList.toggle('annot-revealed', shown);
			const btn = sec.querySelector('[data-annot-reveal]');
			if (btn) {
				btn.disabled = !written;
				btn.textContent = written ? "Compare with the site's answer" : `Write ${q.what} in your worksheet first`;
			}
		}
		const hide = serverHidesSets || (quizOn() && !r.has(tag + ' two-sets'));
		for (const [id, [plain, quiz]] of Object.entries(SET_LABELS)) {
			const ed = editors.get(id);
			if (!ed) continue;
			ed.label.textContent = hide ? quiz : plain;
			ed.input.placeholder = hide ? 'TypeName, file.go:line' : 'file.go:line';
		}
	}
	function quizPlaceholder(key, head, text) {
		const box = el('div', 'annot-quiz-hidden');
		if (head) box.append(el('h2', '', head));
		box.append(el('p', '', text));
		const b = el('button', 'annot-reveal');
		b.type = 'button';
		b.dataset.annotReveal = key;
		b.addEventListener('click', () => {
			reveal(key);
			sheetQuizState();
		});
		box.append(b);
		return box;
	}
	function setQuiz(on) {
		document.body.classList.toggle('annot-quiz', on);
		store('syncloop-quiz', on ? '1' : '');
		for (const c of caseEls) quizState(c.dataset.case);
		sheetQuizState();
	}

	return { quizOn, quizWanted, reveal, quizState, sheetQuizState, quizPlaceholder, setQuiz, PW_QUESTION, SET_LABELS };
}
