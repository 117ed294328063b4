// logline.js: what a feed's message says, as text a page can show: the
// feed's messages one a line (jsonLines), a line's time of day, what the
// kubelet's line says, the kubelet version's source, and clean, which
// takes escape sequences and control characters out of log text (log
// text is untrusted: it reaches the page through textContent, cleaned).
// Pure functions: no DOM, no state.

// versionLink is the reading of the kubelet's own version, when it is a
// tag other than the page's. versionTag is the server's answer (the
// feed's status says version_tag: "v1.31.0+abc" reads at v1.31.0,
// "v1.38.0-beta.0" at itself): the one test of a version's shape is the
// server's (classify.VersionTag).
export function versionLink(versionTag, tag) {
	return versionTag && versionTag !== tag ? `/k8s/${versionTag}/` : '';
}

// versionSource says where the feed's kubelet version came from: "from its
// start-up line", "from its log sites: v1.38.0-beta.0 (or v1.38.0-rc.0)".
export function versionSource(s) {
	if (s.version_from === 'log sites') {
		const also = (s.version_also || []).join(', ');
		return `from its log sites: ${s.kubelet_version}${also ? ` (or ${also})` : ''}`;
	}
	return s.version_from ? `from its ${s.version_from}` : '';
}

// clean removes ANSI escape sequences and control characters but tab.
export function clean(s) {
	return String(s ?? '')
		.replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
		.replace(/\x1b[@-_]/g, '')
		.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}

// jsonLines are the JSON values of text's lines (the feed's messages, one a
// line); a line that is not JSON is skipped.
export function* jsonLines(text) {
	for (const part of String(text).split('\n')) {
		if (!part) continue;
		try {
			yield JSON.parse(part);
		} catch {
			// not a message: skipped
		}
	}
}

// clock is the time of day of an RFC 3339 stamp, as written (no zone change).
export function clock(t) {
	if (typeof t !== 'string' || t.startsWith('0001-')) return '';
	const m = /T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)/.exec(t);
	return m ? m[1] : '';
}

// klogHead is a klog header: what precedes the message and its key=values.
const klogHead = /[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\s\]]+\] /;

// body is what a line says: the klog message with its key=value pairs when
// the kubelet's own line has them (the classifier's message is the message
// alone), else the message, else the line. The kubelet's own line is text
// when the journal wraps it (a journald JSON entry comes with text only).
export function body(l) {
	const own = String(l.text || l.raw || '');
	if (l.format === 'raw' || !l.message) return own;
	const m = klogHead.exec(own);
	return m ? own.slice(m.index + m[0].length) : l.message;
}
