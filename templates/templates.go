// Package templates holds the site's html/template files, embedded so the
// binary is the whole site. The server parses them once at start.
package templates

import "embed"

// FS holds every *.html template.
//
//go:embed *.html
var FS embed.FS
