// socket.js: a WebSocket to this site that comes back. When it closes it
// opens again after a wait that grows each time, with jitter (dom.js
// Backoff), counting the seconds down where the page says how it is
// connected; a permanent refusal (codes.js) stops it, with the page's words
// for why. The live pane (live.js) and a room (room.js) each keep one.

import { Backoff, countdown } from './dom.js';

export class Socket {
	// path() is the address to open, asked anew at every attempt (the live
	// pane resumes after the last line it holds). Options:
	//   min, max     the backoff's bounds, in ms
	//   open(sock)   the socket opened (join, say hello)
	//   message(data) a message arrived, as the server sent it
	//   refused      {code: words}: closes that are final
	//   gone(words, code) a final close came: the socket stays shut
	//   node, say(s), retrying() where the wait is counted down, in what
	//                words, and what the page says when the wait is over
	//   down()       any other close, before the wait starts
	constructor(path, opts) {
		this.path = path;
		this.opts = opts;
		this.backoff = new Backoff(opts.min, opts.max);
		this.ws = null;
		this.stopped = false;
		this.stopCountdown = () => {};
		this.connect();
	}

	connect() {
		const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
		const ws = new WebSocket(`${proto}//${location.host}${this.path()}`);
		this.ws = ws;
		const o = this.opts;
		ws.addEventListener('open', () => o.open?.(this));
		ws.addEventListener('message', (ev) => o.message(ev.data));
		ws.addEventListener('close', (ev) => {
			if (this.stopped) return;
			this.stopCountdown();
			const final = o.refused?.[ev.code];
			if (final) {
				o.gone?.(final, ev.code);
				return;
			}
			o.down?.();
			this.stopCountdown = countdown(o.node, this.backoff.next(), o.say, () => {
				o.retrying?.();
				this.connect();
			});
		});
	}

	// connected says the server took the connection: the next wait starts
	// short again.
	connected() {
		this.backoff.reset();
	}

	// send sends m as JSON, when the socket is open; nothing otherwise (the
	// next connection says what matters again).
	send(m) {
		if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
	}

	// stop: the page is leaving; a close from now on is not reconnected.
	stop() {
		this.stopped = true;
		this.stopCountdown();
	}
}
