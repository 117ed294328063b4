// checklist.js: the exercise's step 3 in a room, as its readers work: the
// checks the instructor's grid shows, read by the server from the room's
// own stored journal (GET /rooms/{id}/checks.json), never from the demo.
// Every text is set as text: a journal line is untrusted.

const box = document.querySelector('[data-room-checks]');
const room = document.querySelector('#room')?.dataset.room;
const EVERY = 5000;

// The four checks, in the exercise's order, and what each says once done.
const CHECKS = [
	['added', (pod) => `${pod} added`],
	['liveness_failed', (pod) => `${pod}'s liveness probe failed`],
	['deleted', (pod) => `${pod} deleted at teardown`],
	['verbosity', () => 'the kubelet logs at -v=4 or more'],
];

function item(check, done) {
	const li = document.createElement('li');
	li.dataset.check = check.name;
	li.dataset.ok = check.c.ok ? 'true' : 'false';
	const mark = document.createElement('span');
	mark.className = 'room-check-mark';
	mark.textContent = check.c.ok ? '✓' : '·';
	mark.setAttribute('aria-hidden', 'true');
	li.append(mark, ' ');
	const what = document.createElement('span');
	what.textContent = check.c.ok ? done : `${done}: ${check.c.text || 'not yet'}`;
	li.append(what);
	const at = check.c.at;
	if (check.c.ok && at) {
		li.append(' — ');
		const a = document.createElement('a');
		a.href = at.link || '#';
		a.textContent = `line ${at.seq}` + (at.time ? `, ${new Date(at.time).toLocaleTimeString()}` : '');
		a.title = at.line || '';
		li.append(a);
	}
	return li;
}

function render(r) {
	const pod = r.pod || 'probe-me';
	const list = box.querySelector('[data-room-checks-list]');
	const items = CHECKS.map(([name, done]) => item({ name, c: r[name] || {} }, done(pod)));
	list.replaceChildren(...items);
	const n = CHECKS.filter(([name]) => r[name]?.ok).length;
	box.querySelector('[data-room-checks-sum]').textContent = `${n}/${CHECKS.length}`;
	box.hidden = false;
}

async function refresh() {
	try {
		const res = await fetch(`/rooms/${encodeURIComponent(room)}/checks.json`, { cache: 'no-store' });
		if (res.ok) render(await res.json());
	} catch {
		// the next refresh tries again
	}
}

if (box && room) {
	refresh();
	setInterval(refresh, EVERY);
}
