package delivery_test

import (
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
	"strings"
	"testing"
)

// TestCluster_DeliveryCapsAndDedupe: the caps and the dedupe window hold
// exactly on a 3-master cluster, under 50 concurrent publishes for one user
// through two hubs.
func TestCluster_DeliveryCapsAndDedupe(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	capsAndDedupe(t, func(c *testhub.Configs) { c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",") }, cl.Addrs()[0])
}
