package ingest

import (
	"strconv"

	"roomhub/hub"
)

// Redis key names of ingest, all in one place (the core's are in
// hub/keys.go). A partition's keys carry its number as their hash tag.

// PartitionKey is ingest partition p's stream, which a backend fills with XADD
// (field event: a publish body): "ingest:{3}". A room's partition is
// roomId mod INGEST_PARTITIONS.
func PartitionKey(p int) string { return "ingest:{" + strconv.Itoa(p) + "}" }

// DeadKey keeps partition p's entries that could not be published,
// each under its own entry id: "ingest:dead:{3}".
func DeadKey(p int) string { return "ingest:dead:{" + strconv.Itoa(p) + "}" }

// LeaseKey is held by the instance consuming partition p:
// "lock:ingest:{3}".
func LeaseKey(p int) string { return hub.LockKey("ingest:{" + strconv.Itoa(p) + "}") }

// InstancesKey lists the instances that consume ingest partitions,
// each scored by the end of its heartbeat (ms), so that each takes its
// share.
const InstancesKey = "ingest:instances"

// Group is the consumer group every instance reads the ingest
// streams through.
const Group = "roomhub"

// IdempotencyKey is the idempotency key of an ingest entry that names
// none: "ingest:<entry id>".
func IdempotencyKey(entryID string) string { return "ingest:" + entryID }
