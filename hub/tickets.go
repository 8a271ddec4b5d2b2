package hub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"

	"github.com/redis/rueidis"
)

// StreamTicketTTL is how long a stream ticket may open a stream.
const StreamTicketTTL = 30 * time.Second

// maxTicket bounds a ticket's length: longer is no ticket the hub made.
const maxTicket = 64

// IssueTicket keeps token (a verified access token) under a new ticket that
// opens one stream, once, within StreamTicketTTL, on any instance: a URL
// may end up in a proxy's access log, a ticket used or expired is worth
// nothing there.
func (h *Hub) IssueTicket(ctx context.Context, token string) (string, error) {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	t := base64.RawURLEncoding.EncodeToString(b[:])
	_, err := Call(h.rdb, ctx, h.rdb.B().Set().Key(StreamTicketKey(t)).Value(token).Px(StreamTicketTTL).Build(), NoReply)
	return t, err
}

// RedeemTicket returns the token kept under ticket and forgets it; "" when
// there is none (unknown, used or expired).
func (h *Hub) RedeemTicket(ctx context.Context, ticket string) (string, error) {
	if ticket == "" || len(ticket) > maxTicket {
		return "", nil
	}
	token, err := Call(h.rdb, ctx, h.rdb.B().Getdel().Key(StreamTicketKey(ticket)).Build(), rueidis.RedisResult.ToString)
	if errors.Is(err, rueidis.Nil) {
		return "", nil
	}
	return token, err
}
