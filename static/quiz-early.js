// quiz-early.js: a classic script in the head, run before the page is
// drawn. In quiz mode the site's answers must not show even for the moment
// before annotate.js (a module, run after parsing) hides them: this marks
// the page so that annotate.css hides them until then.
try {
	if (localStorage.getItem('syncloop-quiz') === '1') document.documentElement.classList.add('annot-quiz-early');
} catch {
	// no storage: no quiz mode either
}
