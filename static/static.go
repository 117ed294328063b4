// Package static holds the site's CSS and ES modules, embedded so the binary
// is the whole site (no CDN, no build step). The chroma stylesheet is not
// here: the server generates it at start from the chroma styles it names.
package static

import "embed"

// FS holds every file served under /static/.
//
//go:embed *.css *.js
var FS embed.FS
