// identity.js: who this browser's reader says they are, in one place: the
// name they gave (offered with what they write, in rooms and on a class's
// roster) and the colour they picked. Both live in localStorage
// ('syncloop-name', 'syncloop-color'), so every page of the site agrees.
// The server stamps authors itself (a class's session, a room's reader
// cookie): these are only what the browser offers it.

import { store, stored } from './dom.js';

export const COLORS = 8; // the rc-0 … rc-7 classes of style.css
export const NAME_MAX = 32;

// readerName is the name this reader gave, or "".
export function readerName() {
	return stored('syncloop-name', '');
}

// setReaderName keeps n (trimmed, at most NAME_MAX characters) and returns
// what it kept; an empty n keeps the name given before and returns "".
export function setReaderName(n) {
	const kept = String(n ?? '').trim().slice(0, NAME_MAX);
	if (kept) store('syncloop-name', kept);
	return kept;
}

// readerColor is this reader's colour (0 … COLORS-1): the one they picked,
// else one drawn at random on their first page and kept from then on.
export function readerColor() {
	const s = stored('syncloop-color', '');
	const c = s === '' ? NaN : Number(s);
	if (Number.isInteger(c) && c >= 0) return c % COLORS;
	const drawn = Math.floor(Math.random() * COLORS);
	store('syncloop-color', String(drawn));
	return drawn;
}

export function setReaderColor(i) {
	store('syncloop-color', String(((i % COLORS) + COLORS) % COLORS));
}

// colorClass is the class that draws colour c ("rc-N").
export function colorClass(c) {
	return 'rc-' + ((Number(c) || 0) % COLORS);
}
