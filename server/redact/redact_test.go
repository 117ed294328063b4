package redact

import "testing"

func TestString(t *testing.T) {
	const id = "AbCdEf0123456789_-xyzQ" // 22 characters, as rooms.NewSecret makes
	tests := []struct{ in, want string }{
		{"/rooms/" + id, "/rooms/AbCdEf…"},
		{"/rooms/" + id + "/notes/events", "/rooms/AbCdEf…/notes/events"},
		{"/feeds/room-" + id + "/ingest", "/feeds/room-AbCdEf…/ingest"},
		{"feed room-" + id + " detached", "feed room-AbCdEf… detached"},
		{"/rooms/" + id + "?k=" + id, "/rooms/AbCdEf…?k=…"},
		{"GET /x?a=1&token=s3cr3t&b=2", "GET /x?a=1&token=…&b=2"},
		{"nats: connect to nats://alice:hunter2@10.0.0.1:4222,nats://bob:pw@h2:4222: refused",
			"nats: connect to nats://alice:…@10.0.0.1:4222,nats://bob:…@h2:4222: refused"},
		{"nats://s3cr3tt0ken@127.0.0.1:4222", "nats://…@127.0.0.1:4222"},
		{"tls://u:p@h:1 and https://example.com/path", "tls://u:…@h:1 and https://example.com/path"},
		// Nothing secret: left alone.
		{"/rooms/short", "/rooms/short"},
		{"/k8s/v1.31.0/", "/k8s/v1.31.0/"},
		{"mail bob@example.com", "mail bob@example.com"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
