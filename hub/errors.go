package hub

import "errors"

// Domain errors. The API maps each to an HTTP status and code in one table;
// wrapped errors keep their cause for the log only.
var (
	ErrInvalid          = errors.New("invalid input")             // COMMON400
	ErrBadEventType     = errors.New("missing or bad event type") // NOTIF4001
	ErrIdempotencyReuse = errors.New("idempotency key reused with a different body")
	ErrNotFound         = errors.New("not found")
	ErrRedis            = errors.New("redis unavailable")                             // REDIS5001
	ErrRedisReply       = errors.New("unexpected redis reply")                        // REDIS5002
	ErrNotReplicated    = errors.New("published, but not on enough replicas in time") // REDIS5001, PUBLISH_WAIT_REPLICAS
)
