// peek.js: every call and identifier of the module on the reading page is a
// control ([data-def], a button the server writes around it) that opens its
// definition in place, under its line, at the page's tag: the body
// highlighted like the main code, its lines linked upstream, its own calls
// controls again (nested, with a breadcrumb). Esc closes the innermost open
// definition and gives the focus back to the control that opened it. The
// definitions come from GET /k8s/{tag}/def?sym=SYMBOL (server/site/def.go).

import { el } from './dom.js';

const tag = document.getElementById('live')?.dataset.tag || location.pathname.split('/')[2] || '';
// A page of another reading names its own definitions' address
// (data-def-base: the volume manager's /k8s/{tag}/volume-manager/def).
const defBase = document.querySelector('[data-def-base]')?.dataset.defBase || `/k8s/${encodeURIComponent(tag)}/def`;
const cache = new Map(); // sym → Promise of the /def answer

function fetchDef(sym) {
	if (!cache.has(sym)) {
		const p = fetch(`${defBase}?sym=${encodeURIComponent(sym)}`)
			.then(async (res) => {
				const body = await res.json().catch(() => ({ error: `the server answered ${res.status}` }));
				if (!res.ok) throw new Error(body.error || `the server answered ${res.status}`);
				return body;
			});
		p.catch(() => cache.delete(sym)); // a failure is asked again next time
		cache.set(sym, p);
	}
	return cache.get(sym);
}

// shortSym drops the package path: "(*Kubelet).HandlePodAdditions".
function shortSym(sym) {
	const slash = sym.lastIndexOf('/');
	const dot = sym.indexOf('.', slash + 1);
	return dot < 0 ? sym : sym.slice(dot + 1);
}

// trail is the symbols of the peeks a control sits in, outermost first.
function trail(control) {
	const syms = [];
	for (let p = control.closest('[data-peek]'); p; p = p.parentElement?.closest('[data-peek]')) syms.unshift(p.dataset.peek);
	return syms;
}

// anchorFor is where a control's peek goes: after its line in a code
// block, after its list item or paragraph elsewhere (the margin).
function anchorFor(control) {
	return control.closest('.line') || control.closest('li, p, dd') || control;
}

function openPeekOf(control) {
	const id = control.getAttribute('aria-controls');
	return id ? document.getElementById(id) : null;
}

let seq = 0;

function close(control, focus) {
	const peek = openPeekOf(control);
	if (peek) peek.remove();
	control.setAttribute('aria-expanded', 'false');
	control.removeAttribute('aria-controls');
	if (focus) control.focus();
}

async function open(control) {
	const sym = control.dataset.def;
	const peek = el('div', 'peek');
	peek.id = `peek-${++seq}`;
	peek.dataset.peek = sym;
	peek.setAttribute('role', 'region');
	peek.setAttribute('aria-label', `Definition of ${shortSym(sym)}`);
	peek.tabIndex = -1;

	const head = el('div', 'peek-head');
	const crumbs = el('nav', 'peek-crumbs');
	crumbs.setAttribute('aria-label', 'Opened from');
	for (const s of [...trail(control), sym]) {
		if (crumbs.childNodes.length) crumbs.append(el('span', 'peek-sep', ' › '));
		crumbs.append(el('span', 'peek-crumb', shortSym(s)));
	}
	const closer = el('button', 'peek-close', '×');
	closer.type = 'button';
	closer.title = 'Close (Esc)';
	closer.setAttribute('aria-label', `Close ${shortSym(sym)}`);
	closer.addEventListener('click', () => close(control, true));
	head.append(crumbs, closer);
	const body = el('div', 'peek-body', 'Loading…');
	peek.append(head, body);

	const anchor = anchorFor(control);
	anchor.after(peek);
	control.setAttribute('aria-expanded', 'true');
	control.setAttribute('aria-controls', peek.id);

	try {
		const d = await fetchDef(sym);
		body.textContent = '';
		body.append(section(d));
		if (d.impls?.length) {
			body.append(el('p', 'peek-impls', d.impls.length === 1
				? `Implemented in the module at ${tag} by:`
				: `Implemented in the module at ${tag} by ${d.impls.length} types:`));
			for (const i of d.impls) body.append(section(i));
		}
	} catch (err) {
		body.textContent = `${shortSym(sym)}: ${err.message}`;
		body.classList.add('peek-error');
	}
	peek.focus({ preventScroll: true });
	peek.scrollIntoView({ block: 'nearest' });
}

// section is one definition: its name, where it is (linked upstream), its
// highlighted code, which the server rendered (chroma, escaped).
function section(d) {
	const s = el('section', 'peek-def');
	const h = el('div', 'peek-title');
	h.append(el('code', 'peek-name', d.short), el('span', 'peek-kind', ` ${d.kind} `));
	const a = el('a', 'peek-where', `${d.file}:${d.start === d.end ? d.start : `${d.start}–${d.end}`} ↗`);
	a.href = d.upstream;
	a.title = `${d.file} at ${tag} on GitHub`;
	h.append(a);
	const code = document.createElement('div');
	code.className = 'peek-code-wrap';
	code.innerHTML = d.html; // the server's highlighted source: escaped text in spans and buttons
	s.append(h, code);
	return s;
}

document.addEventListener('click', (ev) => {
	const control = ev.target instanceof Element ? ev.target.closest('button[data-def]') : null;
	if (!control) return;
	ev.preventDefault();
	if (control.getAttribute('aria-expanded') === 'true') close(control, false);
	else open(control);
});

document.addEventListener('keydown', (ev) => {
	if (ev.key !== 'Escape' || ev.defaultPrevented) return;
	// The innermost peek the focus is in, else the last one opened.
	const active = document.activeElement;
	let peek = active instanceof Element ? active.closest('[data-peek]') : null;
	if (!peek) {
		const all = document.querySelectorAll('[data-peek]');
		peek = all[all.length - 1];
	}
	if (!peek) return;
	const control = document.querySelector(`[aria-controls="${peek.id}"]`);
	if (control) close(control, true);
	else peek.remove();
	ev.preventDefault();
});
