package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// DefaultPartitions is the hub's INGEST_PARTITIONS default.
const DefaultPartitions = 16

// IngestMaxLen is the MAXLEN ~ of an ingest stream: a bound for a hub that
// is away for long, far above what it keeps (it trims what it finished).
const IngestMaxLen = 1_000_000

// IngestKey is the stream of roomID's partition: "ingest:{<roomId mod
// partitions>}" (partitions: the hub's INGEST_PARTITIONS).
func IngestKey(roomID int64, partitions int) string {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	return "ingest:{" + strconv.FormatInt(roomID%int64(partitions), 10) + "}"
}

// IngestFields is e as an ingest entry's fields: event, its JSON (and
// traceparent, when given: the backend's trace the publish continues).
func IngestFields(e Event, traceparent string) ([]string, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	f := []string{"event", string(b)}
	if traceparent != "" {
		f = append(f, "traceparent", traceparent)
	}
	return f, nil
}

// XAdder is what publishing through ingest needs of the backend's Redis
// client: XADD key MAXLEN ~ maxLen * field value…, answering the entry's
// id. Any client fits in a few lines (go-redis, rueidis: see README).
type XAdder interface {
	XAdd(ctx context.Context, key string, maxLen int64, fields []string) (string, error)
}

// Ingest publishes through the ingest streams on the backend's own Redis:
// durable once XADD answers, published by the hub in each room's order.
type Ingest struct {
	redis      XAdder
	partitions int
}

// NewIngest publishes through redis, for a hub with partitions
// INGEST_PARTITIONS (0: the default, 16).
func NewIngest(redis XAdder, partitions int) *Ingest {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	return &Ingest{redis: redis, partitions: partitions}
}

// Publish adds e to its room's partition and answers the entry's id. Its
// idempotency key, when it names none, is "ingest:<entry id>": an entry the
// hub reads twice is published once.
func (in *Ingest) Publish(ctx context.Context, e Event) (string, error) {
	if e.RoomID <= 0 {
		return "", fmt.Errorf("roomhub: roomId must be positive, not %d", e.RoomID)
	}
	fields, err := IngestFields(e, "")
	if err != nil {
		return "", err
	}
	return in.redis.XAdd(ctx, IngestKey(e.RoomID, in.partitions), IngestMaxLen, fields)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
