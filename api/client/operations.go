package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
)

// What the operator's console reads, for a backend's own tools too.

// Overview is the fleet at a glance (api/openapi.yaml's Overview).
type Overview struct {
	Instances []struct {
		ID              string  `json:"id"`
		Connections     int64   `json:"connections"`
		Rooms           int64   `json:"rooms"`
		StartedAt       string  `json:"startedAt"`
		PublishesPerSec float64 `json:"publishesPerSec"`
	} `json:"instances"`
	Connections     int64            `json:"connections"`
	PublishesPerSec float64          `json:"publishesPerSec"`
	Deliveries      map[string]int64 `json:"deliveries"` // by state, since each live instance started
	Dead            struct {
		Deliveries int64 `json:"deliveries"`
		Ingest     int64 `json:"ingest"`
	} `json:"dead"`
	IngestLag      int64 `json:"ingestLag"`
	FanoutsRunning int64 `json:"fanoutsRunning"`
}

// Overview reads the live instances' figures and their sums
// (GET /api/v1/internal/overview).
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	err := c.call(ctx, "GET", "/api/v1/internal/overview", nil, &o)
	return o, err
}

// Person is one person as the hub sees them (api/openapi.yaml's Person).
type Person struct {
	UserID  int64 `json:"userId"`
	Online  bool  `json:"online"`
	Streams int   `json:"streams"`
	Devices []struct {
		ID         string  `json:"id"`
		Platform   string  `json:"platform"`
		Label      string  `json:"label"`
		Enabled    bool    `json:"enabled"`
		AddedAt    string  `json:"addedAt"`
		LastSentAt *string `json:"lastSentAt"`
	} `json:"devices"`
	Counts           json.RawMessage `json:"counts"` // the inbox's counts, as GET /api/v1/notifications/counts
	Topics           int64           `json:"topics"`
	RecentDeliveries []Delivery      `json:"recentDeliveries"` // newest first, at most 50
}

// Person reads what the hub knows of user: online or not, devices with
// consent, inbox counts, topics, latest deliveries
// (GET /api/v1/internal/users/{userId}).
func (c *Client) Person(ctx context.Context, user int64) (Person, error) {
	var p Person
	err := c.call(ctx, "GET", "/api/v1/internal/users/"+strconv.FormatInt(user, 10), nil, &p)
	return p, err
}

// RunningFanouts lists the running fan-outs of topic ("": of every topic),
// oldest first (GET /api/v1/internal/fanouts).
func (c *Client) RunningFanouts(ctx context.Context, topic string) ([]Fanout, error) {
	var r struct {
		Fanouts []Fanout `json:"fanouts"`
	}
	path := "/api/v1/internal/fanouts"
	if topic != "" {
		path += "?topicKey=" + url.QueryEscape(topic)
	}
	err := c.call(ctx, "GET", path, nil, &r)
	return r.Fanouts, err
}
