// Package hub is roomhub's domain, with no HTTP in it: local rooms and their
// subscribers, the pub/sub listener that feeds them, room history, presence,
// locks and the Redis key names. Redis is the only shared state, so any number
// of hubs may run side by side on one Redis or one Redis Cluster.
package hub
