// Package web embeds what the hub serves to browsers (static/): the
// client SDK (roomhub.js and its modules in sdk/), the <roomhub-inbox>
// element (roomhub-inbox.js, its modules in inbox/), the service worker
// (roomhub-sw.js), the React wrapper (react.js), their type declarations,
// and the demo page.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// FS is static/ as the hub serves it at / and /static/.
func FS() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded folder exists at build time
	}
	return sub
}
