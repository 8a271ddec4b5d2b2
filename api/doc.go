// Package api adapts the hub to HTTP with Echo: routes, the JSON envelope and
// its error table (errors.go), user and internal auth and their rate limits,
// the SSE writer (stream.go; wire_linux.go takes a plain HTTP/1.1 stream's
// socket over), health and metrics.
//
// A publish comes through one of three doors, each ending in the one
// pipeline of the domain (hub/publish): POST /notifications/publish and
// its batch (events.go), and the ingest streams (hub/ingest, started by
// UseIngest). The pipeline answers each body with an Outcome; this package
// turns it into a status and an envelope (toError), as ingest turns it into
// published, dead or read again. A publish then takes one of two branches
// in the inbox: a plain one (no recipients) is one script in a pipeline
// shared with the others of its kind; one with recipients also writes their
// inbox items and schedules their deliveries beyond the tab.
package api
