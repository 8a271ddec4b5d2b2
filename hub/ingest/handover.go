package ingest

import (
	"context"
	"strconv"

	"roomhub/hub/publish"
)

// publishEntries hands entries to the publish path, in order per room, and
// reads each outcome: published (or a duplicate of an earlier publish);
// refused for what it says, dead with the code and message the HTTP route
// answers for that body; failed for want of Redis, read again. An entry
// without an event field, or larger than a publish body may be (the read
// returned its size alone), is dead before it gets there.
func (in *Ingest) publishEntries(ctx context.Context, entries []Entry) []Outcome {
	out := make([]Outcome, len(entries))
	bodies := make([]publish.Body, 0, len(entries))
	at := make([]int, 0, len(entries))
	limit := strconv.FormatInt(in.maxEntry, 10)
	for i, e := range entries {
		switch {
		case e.Missing:
			out[i] = Outcome{Result: Dead, Code: "COMMON400", Message: "the entry has no event field (its fields are kept in event, as a JSON object)"}
		case e.TooLarge > 0:
			out[i] = Outcome{Result: Dead, Code: "COMMON413",
				Message: "the entry's " + strconv.FormatInt(e.TooLarge, 10) + " bytes are over the " + limit + " an event may hold; its text is not kept"}
		default:
			bodies, at = append(bodies, publish.Body{Raw: e.Body, DefaultKey: e.Key, Span: e.Span}), append(at, i)
		}
	}
	for j, o := range in.publish.Run(ctx, bodies, true) {
		r, refused := o.Refused()
		switch {
		case o.Err == nil && o.Result.Duplicate:
			out[at[j]].Result = Duplicate
		case o.Err == nil:
			out[at[j]].Result = Published
		case refused:
			out[at[j]] = Outcome{Result: Dead, Code: r.Code, Message: r.Message}
		default:
			out[at[j]].Result = Retry
			in.log.ErrorContext(ctx, "ingest event failed", "entry", entries[at[j]].ID, "err", o.Err)
		}
	}
	return out
}
