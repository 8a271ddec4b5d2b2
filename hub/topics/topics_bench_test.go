package topics_test

import (
	"context"
	"testing"
	"time"

	"roomhub/internal/testredis"
)

// BenchmarkFollowers is what a follower costs Redis: 100,000 people new to
// the hub follow one topic through Follow, 10,000 a call (the API's most),
// as used_memory's growth per follower (the topic's chunks and each
// person's own list), and followers a second; their ids in calls of
// consecutive ids (an import in id order), or spread over a billion (each
// call touching most of the topic's chunks). Run:
//
//	go test -run '^$' -bench Followers -benchtime 1x ./hub/topics/
func BenchmarkFollowers(b *testing.B) {
	for _, shape := range []string{"ascending", "spread"} {
		b.Run(shape, func(b *testing.B) { followers(b, shape == "spread") })
	}
}

func followers(b *testing.B, spread bool) {
	const people, call = 100000, 10000
	for range b.N {
		rdb := testredis.Client(b, testredis.Start(b).Addr())
		tp := newTopics(b, rdb, 0)
		before := testredis.Stat(b, rdb, "memory", "used_memory")
		start := time.Now()
		for from := int64(1); from <= people; from += call {
			ids := make([]int64, 0, call)
			for u := from; u < from+call; u++ {
				if spread {
					ids = append(ids, u*7919%1000000007)
				} else {
					ids = append(ids, u)
				}
			}
			if _, _, err := tp.Follow(context.Background(), "product:123", ids, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		b.ReportMetric((testredis.Stat(b, rdb, "memory", "used_memory")-before)/people, "B/follower")
		b.ReportMetric(people/elapsed.Seconds(), "followers/s")
	}
}
