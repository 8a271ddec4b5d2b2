package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// DefaultPartitions is the hub's INGEST_PARTITIONS default.
const DefaultPartitions = 16

// IngestMaxLen is the MAXLEN ~ of an ingest stream: a bound for a hub that
// is away for long, far above what it keeps (it trims what it finished).
const IngestMaxLen = 1_000_000

// DefaultPublishMaxBytes is the hub's PUBLISH_MAX_BYTES default: the most
// an event's data may hold.
const DefaultPublishMaxBytes = 64 << 10

// bodyHeadway is how much larger than PUBLISH_MAX_BYTES an entry the hub
// reads may be: room for recipients and the other fields. An entry over it
// is dead at the hub (413) without being read.
const bodyHeadway = 256 << 10

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
	// MaxBytes is the hub's PUBLISH_MAX_BYTES (NewIngest sets the
	// default): an event whose data holds more, or whose entry holds more
	// than it and 256 KiB, is refused here, never sent to Redis (the hub
	// would only dead-letter it, 413).
	MaxBytes int64
}

// ErrTooLarge is Publish's answer to an event over Ingest.MaxBytes.
var ErrTooLarge = errors.New("roomhub: the event is over PUBLISH_MAX_BYTES")

// NewIngest publishes through redis, for a hub with partitions
// INGEST_PARTITIONS (0: the default, 16) and the default PUBLISH_MAX_BYTES
// (set MaxBytes for another).
func NewIngest(redis XAdder, partitions int) *Ingest {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	return &Ingest{redis: redis, partitions: partitions, MaxBytes: DefaultPublishMaxBytes}
}

// Publish adds e to its room's partition and answers the entry's id. Its
// idempotency key, when it names none, is "ingest:<entry id>": an entry the
// hub reads twice is published once.
func (in *Ingest) Publish(ctx context.Context, e Event) (string, error) {
	if e.RoomID <= 0 {
		return "", fmt.Errorf("roomhub: roomId must be positive, not %d", e.RoomID)
	}
	if e.Data != nil { // its JSON once: measured here, copied as it is into the event's
		data, err := json.Marshal(e.Data)
		if err != nil {
			return "", err
		}
		if in.MaxBytes > 0 && int64(len(data)) > in.MaxBytes {
			return "", fmt.Errorf("%w (%d bytes): the hub would refuse it (413)", ErrTooLarge, in.MaxBytes)
		}
		e.Data = json.RawMessage(data)
	}
	fields, err := IngestFields(e, "")
	if err != nil {
		return "", err
	}
	if in.MaxBytes > 0 && int64(len(fields[0])+len(fields[1])) > in.MaxBytes+bodyHeadway {
		return "", fmt.Errorf("%w (%d bytes): the hub would refuse it (413)", ErrTooLarge, in.MaxBytes)
	}
	return in.redis.XAdd(ctx, IngestKey(e.RoomID, in.partitions), IngestMaxLen, fields)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
