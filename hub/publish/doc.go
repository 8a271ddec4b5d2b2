// Package publish is the one path of a publish, whichever door it comes
// through: POST /notifications/publish, its batch, or an ingest entry. main
// builds one Pipeline (New, from its Config) and hands it to the HTTP
// server and to ingest. Run reads top to bottom: each body is decoded and
// checked (Decode), the checked requests are sorted by room (order.go),
// rooms that notify no one go in one pipeline of the core's scripts
// (publishPlain), the others side by side, an event at a time per
// room (notify: the inbox drafts it, the core publishes the room's event
// with the outbox note, the inbox delivers its recipients' items and
// deliveries); and each body ends as an Outcome: published (or a duplicate
// of an earlier publish), refused for what it says (a Refusal: the code and
// message of DESIGN's table; RefusalOf is the one rule), or failed for want
// of Redis. Each door turns an Outcome into its own answer: the HTTP adapter
// (package api) into a status and an envelope; ingest into published, dead
// or read again.
package publish
