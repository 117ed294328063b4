// held.js: the rooms this browser holds, that is, was given the driver link
// of. They are kept in localStorage (this site's only), so that "Your
// rooms" lists them on a class's page and in a room's panel, and a student
// who closed the tab gets back in as the driver. An entry is forgotten a
// day after it was last opened: a room idle that long has expired.

import { stored, store } from './dom.js';

const NAME = 'syncloop-held-rooms';
const KEEP = 24 * 3600 * 1000;

// heldRooms is [{id, key, tag, cls, at}], the last opened first.
export function heldRooms() {
	let list = [];
	try {
		list = JSON.parse(stored(NAME, '[]'));
	} catch {
		list = [];
	}
	if (!Array.isArray(list)) list = [];
	const now = Date.now();
	return list
		.filter((r) => r && typeof r.id === 'string' && typeof r.key === 'string' && now - Number(r.at) < KEEP)
		.sort((a, b) => b.at - a.at);
}

// holdRoom records (or refreshes) a room this browser holds.
export function holdRoom(room) {
	const list = heldRooms().filter((r) => r.id !== room.id);
	list.unshift({ ...room, at: Date.now() });
	store(NAME, JSON.stringify(list.slice(0, 20)));
}

// driverLink is the link that opens a held room as its driver.
export function driverLink(r) {
	return `/rooms/${encodeURIComponent(r.id)}?k=${encodeURIComponent(r.key)}`;
}
