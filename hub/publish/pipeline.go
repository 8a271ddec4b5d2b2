package publish

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/hub/inbox"
)

// Body is one publish body as a door received it, with the idempotency key
// it gets when it names none ("": none) and the span it belongs to (an
// ingest entry's; nil: the context's).
type Body struct {
	Raw        []byte
	DefaultKey string
	Span       trace.Span
}

// Outcome is how one body's publish ended: Result when it was published
// (Result.Duplicate: an earlier publish's), else Err: a *Refusal (see
// Refused) or a failure for want of Redis.
type Outcome struct {
	Result hub.PublishResult
	Err    error
}

// Refused is the outcome's refusal, when the body was refused for what it
// says (sending it again is refused again).
func (o Outcome) Refused() (*Refusal, bool) { return RefusalOf(o.Err) }

// Failed reports whether the publish failed for want of Redis: sending it
// again may succeed.
func (o Outcome) Failed() bool {
	_, refused := o.Refused()
	return o.Err != nil && !refused
}

// Pipeline runs publishes: the domain's one publish path, built once (in
// main) and used by every door.
type Pipeline struct {
	core    *hub.Hub     // a room's event
	inbox   *inbox.Inbox // an event with recipients: the room's, then their items
	maxData int64
}

// New is the pipeline of the core h and its inbox ib, configured by cfg.
func New(h *hub.Hub, ib *inbox.Inbox, cfg Config) *Pipeline {
	return &Pipeline{core: h, inbox: ib, maxData: cfg.MaxDataBytes}
}

// MaxData is the most bytes a publish's data may hold (PUBLISH_MAX_BYTES).
func (p *Pipeline) MaxData() int64 { return p.maxData }

// Run decodes and checks each body as it would be alone, publishes the
// checked ones together (publishAll: one room's in their order) and
// answers each in its place. inOrder: a body that fails for want of Redis
// leaves its room's later bodies unpublished (ErrSkipped).
func (p *Pipeline) Run(ctx context.Context, bodies []Body, inOrder bool) []Outcome {
	out := make([]Outcome, len(bodies))
	reqs := make([]inbox.PublishRequest, 0, len(bodies))
	at := make([]int, 0, len(bodies))
	for i, b := range bodies {
		r, err := Decode(b.Raw, p.maxData)
		if err != nil {
			out[i].Err = err
			continue
		}
		if r.IdempotencyKey == "" {
			r.IdempotencyKey = b.DefaultKey
		}
		r.Span = b.Span
		reqs, at = append(reqs, r), append(at, i)
	}
	results, errs := p.publishAll(ctx, reqs, inOrder)
	for j, i := range at {
		out[i] = Outcome{Result: results[j], Err: errs[j]}
	}
	return out
}
