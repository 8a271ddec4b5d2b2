// Package publish is the one path of a publish, whichever door it comes
// through: POST /notifications/publish, its batch, or an ingest entry. A
// body is decoded and checked here (Decode), the checked requests run
// together (Pipeline.Run: inbox.PublishAll, each room in order), and each
// ends as a domain Outcome: published (or a duplicate of an earlier
// publish), refused for what it says (a Refusal: the code and message of
// DESIGN's table), or failed for want of Redis. Each door turns an Outcome
// into its own answer: the HTTP adapter (package api) into a status and an
// envelope; ingest into published, dead or read again.
//
// Two branches follow in the inbox: a publish that notifies no one (plain)
// is one script in a pipeline shared with the others of its kind; one with
// recipients writes their inbox items and schedules their deliveries too.
package publish
