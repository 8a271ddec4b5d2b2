// Package web holds the browser client SDK and the demo page, embedded in the binary.
package web

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// FS is the demo page and SDK: index.html, roomhub.js.
func FS() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded folder exists at build time
	}
	return sub
}
