package site

// Pages are rendered once and served from memory: the bytes, their gzip
// compression and a strong ETag for each encoding, computed up front so a
// request costs a map lookup and a write.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// page is one rendered response body.
type page struct {
	ctype     string
	body, gz  []byte
	etag      string // of body; the gzip variant's is etagGz
	etagGz    string
	cache     string // Cache-Control
	status    int    // 0 means 200
	length    string // len(body), preformatted
	lengthGz  string
	etagMatch []string // both ETags, for If-None-Match
}

func newPage(ctype string, body []byte, cache string) *page {
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(body)
	zw.Close()
	sum := sha256.Sum256(body)
	tag := base64.RawURLEncoding.EncodeToString(sum[:12])
	p := &page{
		ctype:    ctype,
		body:     body,
		gz:       z.Bytes(),
		etag:     `"` + tag + `"`,
		etagGz:   `"` + tag + `-gz"`,
		cache:    cache,
		length:   strconv.Itoa(len(body)),
		lengthGz: strconv.Itoa(z.Len()),
	}
	p.etagMatch = []string{p.etag, p.etagGz}
	return p
}

// ServeHTTP writes the page, gzipped when the client takes it, or 304 when
// the client's copy is current.
func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Vary"] = []string{"Accept-Encoding"}
	h["Content-Type"] = []string{p.ctype}
	if p.cache != "" {
		h["Cache-Control"] = []string{p.cache}
	}
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	etag, body, length := p.etag, p.body, p.length
	if gz {
		etag, body, length = p.etagGz, p.gz, p.lengthGz
		h["Content-Encoding"] = []string{"gzip"}
	}
	h["Etag"] = []string{etag}
	if p.status == 0 && noneMatch(r.Header.Get("If-None-Match"), p.etagMatch) {
		delete(h, "Content-Type")
		delete(h, "Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = []string{length}
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// noneMatch reports whether an If-None-Match header names one of etags.
func noneMatch(header string, etags []string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" {
			return true
		}
		for _, e := range etags {
			if t == e {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip: named
// (or "*") without q=0.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		for _, param := range strings.Split(params, ";") {
			k, val, _ := strings.Cut(strings.TrimSpace(param), "=")
			if strings.TrimSpace(k) == "q" {
				if q, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil || q == 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}
