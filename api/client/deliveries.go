package client

import (
	"context"
	"net/url"
	"strconv"
)

// Delivery is one delivery beyond the tab (api/openapi.yaml's
// DeliveryRecord).
type Delivery struct {
	NotificationID   string  `json:"notificationId"`
	UserID           int64   `json:"userId"`
	Channel          string  `json:"channel"`
	State            string  `json:"state"`
	Reason           *string `json:"reason"`
	DueAt            *string `json:"dueAt"`
	Attempts         int     `json:"attempts"`
	LastErrorCode    *string `json:"lastErrorCode"`
	LastErrorAttempt *int    `json:"lastErrorAttempt"`
	UpdatedAt        string  `json:"updatedAt"`
}

// Deliveries is a notification's deliveries
// (GET /api/v1/internal/notifications/{id}/deliveries).
func (c *Client) Deliveries(ctx context.Context, notificationID string) ([]Delivery, error) {
	var r struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	err := c.call(ctx, "GET", "/api/v1/internal/notifications/"+url.PathEscape(notificationID)+"/deliveries", nil, &r)
	return r.Deliveries, err
}

// DeadPage is one page of dead deliveries; Next is "" on the last.
type DeadPage struct {
	Deliveries []Delivery
	Next       string
}

// DeadDeliveries lists dead deliveries of channel ("" every one), at most
// limit (0: the hub's 100), after the cursor of the page before ("": from
// the start) (GET /api/v1/internal/deliveries/dead).
func (c *Client) DeadDeliveries(ctx context.Context, channel string, limit int, after string) (DeadPage, error) {
	var r struct {
		Deliveries []Delivery `json:"deliveries"`
		NextAfter  *string    `json:"nextAfter"`
	}
	err := c.call(ctx, "GET", "/api/v1/internal/deliveries/dead"+query("channel", channel, "limit", itoa(limit), "after", after), nil, &r)
	p := DeadPage{Deliveries: r.Deliveries}
	if r.NextAfter != nil {
		p.Next = *r.NextAfter
	}
	return p, err
}

// Redrive says which dead deliveries go back to the queue: any of Channel,
// UserID and NotificationIDs, or All alone.
type Redrive struct {
	Channel         string   `json:"channel,omitempty"`
	UserID          int64    `json:"userId,omitempty"`
	NotificationIDs []string `json:"notificationIds,omitempty"`
	All             bool     `json:"all,omitempty"`
}

// RedriveResult is how many went back, and whether more are left (call again).
type RedriveResult struct {
	Requeued int  `json:"requeued"`
	More     bool `json:"more"`
}

// Redrive puts dead deliveries back in the queue, due now, at most 10,000 a
// call (POST /api/v1/internal/deliveries/redrive).
func (c *Client) Redrive(ctx context.Context, r Redrive) (RedriveResult, error) {
	var out RedriveResult
	err := c.call(ctx, "POST", "/api/v1/internal/deliveries/redrive", r, &out)
	return out, err
}

// DeadEntry is an ingest entry the hub could not publish.
type DeadEntry struct {
	Partition int    `json:"partition"`
	EntryID   string `json:"entryId"`
	Event     string `json:"event"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	At        string `json:"at"`
}

// DeadIngestEntries lists dead ingest entries of partition (-1: every
// one), at most limit (0: the hub's 100), after the cursor of the page
// before (GET /api/v1/internal/ingest/dead); next is "" on the last page.
func (c *Client) DeadIngestEntries(ctx context.Context, partition, limit int, after string) (entries []DeadEntry, next string, err error) {
	p := ""
	if partition >= 0 {
		p = strconv.Itoa(partition)
	}
	var r struct {
		Entries   []DeadEntry `json:"entries"`
		NextAfter *string     `json:"nextAfter"`
	}
	err = c.call(ctx, "GET", "/api/v1/internal/ingest/dead"+query("partition", p, "limit", itoa(limit), "after", after), nil, &r)
	if r.NextAfter != nil {
		next = *r.NextAfter
	}
	return r.Entries, next, err
}
