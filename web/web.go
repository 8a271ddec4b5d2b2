// Package web embeds what the hub serves to browsers (static/): the
// client SDK (roomhub.js and its modules in sdk/), the <roomhub-inbox>
// element (roomhub-inbox.js, its modules in inbox/), the service worker
// (roomhub-sw.js), the React wrapper (react.js), their type declarations,
// and the demo page; and the operator's console (console/).
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

//go:embed console
var consoleFiles embed.FS

// FS is static/ as the hub serves it at / and /static/.
func FS() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded folder exists at build time
	}
	return sub
}

// Console is console/: the operator's console's pages (index.html and
// login.html, templates), scripts and styles, served at /console.
func Console() fs.FS {
	sub, err := fs.Sub(consoleFiles, "console")
	if err != nil {
		panic(err) // the embedded folder exists at build time
	}
	return sub
}
