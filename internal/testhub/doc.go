// Package testhub is the tests' hub: Start runs a hub, its HTTP server and
// everything main wires (inbox, delivery, push channels, ingest, the
// publish pipeline) in the test's process on a real Redis, with each
// package's configuration at hand (Configs). Around it, what any package's
// scenarios need to talk to it as a backend or a person would: requests
// (hub.go, http.go), the SSE client (sse.go), the inbox's, delivery's,
// push's and ingest's routes (inbox.go, delivery.go, push.go, ingest.go),
// real HTTP stand-ins for a backend's gateway, read sink and room access
// (gateway.go, auth.go), a proxy that freezes Redis connections (proxy.go),
// span recording (tracing.go) and the repository's files (files.go). Main,
// which every package's TestMain runs, fails the run on a secret in a log.
//
// It imports every package it wires, so only external test packages
// (package x_test) may import it.
package testhub
