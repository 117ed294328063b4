// quiz-early.js: a classic script in the head, run before the page is
// drawn. In quiz mode the site's answers must not show even for the moment
// before annotate.js (a module, run after parsing) hides them: this marks
// the page so that annotate.css hides them until then. On the pod_workers
// page (which runs no annotate.js) its note answers the worksheet's
// pod_workers question: it stays hidden (style.css) until the reader has
// revealed it from their worksheet, for this tag.
try {
	if (localStorage.getItem('syncloop-quiz') === '1') {
		document.documentElement.classList.add('annot-quiz-early');
		const me = document.currentScript;
		if (me?.dataset.page === 'pod-workers') {
			const shown = JSON.parse(localStorage.getItem('syncloop-revealed') || '[]');
			if (!Array.isArray(shown) || !shown.includes(me.dataset.tag + ' pod-workers')) document.documentElement.classList.add('annot-quiz-pw');
		}
	}
} catch {
	// no storage (or a revealed list that is not one): no quiz mode either
}
