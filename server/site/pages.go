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
	"slices"
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

	// The response's header values, made once: a request sets each as
	// it is, instead of allocating a slice for it. A slice literal's
	// capacity is its length, so a Header.Add copies rather than writes
	// into them.
	hType, hCache, hEtag, hEtagGz, hLength, hLengthGz []string
}

// varyEncoding and encodingGzip are header values every page shares.
var (
	varyEncoding = []string{"Accept-Encoding"}
	encodingGzip = []string{"gzip"}
)

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
	one := func(v string) []string { return []string{v} }
	p.hType, p.hCache, p.hEtag, p.hEtagGz = one(p.ctype), one(p.cache), one(p.etag), one(p.etagGz)
	p.hLength, p.hLengthGz = one(p.length), one(p.lengthGz)
	return p
}

// withCache is a copy of p with another Cache-Control.
func (p *page) withCache(cache string) *page {
	c := *p
	c.cache, c.hCache = cache, []string{cache}
	return &c
}

// ServeHTTP writes the page, gzipped when the client takes it, or 304 when
// the client's copy is current.
func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Vary"] = varyEncoding
	h["Content-Type"] = p.hType
	if p.cache != "" {
		h["Cache-Control"] = p.hCache
	}
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	etag, body, length := p.hEtag, p.body, p.hLength
	if gz {
		etag, body, length = p.hEtagGz, p.gz, p.hLengthGz
		h["Content-Encoding"] = encodingGzip
	}
	h["Etag"] = etag
	if p.status == 0 && noneMatch(r.Header.Get("If-None-Match"), p.etagMatch) {
		delete(h, "Content-Type")
		delete(h, "Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Length"] = length
	if p.status != 0 {
		w.WriteHeader(p.status)
	}
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// noneMatch reports whether an If-None-Match header names one of etags.
func noneMatch(header string, etags []string) bool {
	for header != "" {
		var t string
		t, header, _ = strings.Cut(header, ",")
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || slices.Contains(etags, t) {
			return true
		}
	}
	return false
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip: named
// (or "*") without q=0.
func acceptsGzip(header string) bool {
	for header != "" {
		var part string
		part, header, _ = strings.Cut(header, ",")
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		for params != "" {
			var param string
			param, params, _ = strings.Cut(params, ";")
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
