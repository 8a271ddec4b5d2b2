package api

import (
	"context"
	"encoding/json"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
	"roomhub/hub/delivery"
	"roomhub/hub/push"
)

// The operator's figures: the fleet at a glance, and one person's side of
// "why did they not get it". Internal-key routes that the console's session
// opens too.

// overview is GET /internal/overview's answer.
type overview struct {
	Instances       []hub.InstanceStats `json:"instances"` // without their Counts (summed below)
	Connections     int64               `json:"connections"`
	PublishesPerSec float64             `json:"publishesPerSec"`
	Deliveries      map[string]int64    `json:"deliveries"`
	Dead            deadCounts          `json:"dead"`
	IngestLag       int64               `json:"ingestLag"`
	FanoutsRunning  int64               `json:"fanoutsRunning"`
}

type deadCounts struct {
	Deliveries int64 `json:"deliveries"`
	Ingest     int64 `json:"ingest"`
}

// overview serves GET /internal/overview: the live instances' figures
// (each writes its own every two seconds) and the fleet's sums, the dead
// deliveries and ingest entries, the ingest lag and the running fan-outs.
func (s *Server) overview(c echo.Context) error {
	ctx := c.Request().Context()
	fleet, err := s.hub.Fleet(ctx)
	if err != nil {
		return err
	}
	o := overview{Instances: fleet, Deliveries: hub.SumCounts(fleet, "deliveries")}
	for i, f := range fleet {
		o.Instances[i].Counts = nil
		o.Connections += f.Connections
		o.PublishesPerSec += f.PublishesPerSec
	}
	if d := s.inbox.Delivery(); d != nil {
		if o.Dead.Deliveries, err = d.DeadCount(ctx); err != nil {
			return err
		}
	}
	if s.ingest != nil {
		if o.Dead.Ingest, err = s.ingest.DeadCount(ctx); err != nil {
			return err
		}
		o.IngestLag = s.ingest.Lag()
	}
	if s.topics != nil {
		if o.FanoutsRunning, err = s.topics.RunningCount(ctx); err != nil {
			return err
		}
	}
	return ok(c, o)
}

// person is GET /internal/users/{userId}'s answer.
type person struct {
	UserID           int64             `json:"userId"`
	Online           bool              `json:"online"`
	Streams          int               `json:"streams"`
	Devices          []push.Device     `json:"devices"`
	Counts           json.RawMessage   `json:"counts"`
	Topics           int64             `json:"topics"`
	RecentDeliveries []delivery.Record `json:"recentDeliveries"`
}

// person serves GET /internal/users/:userId: whether the person has a
// stream open (on any instance), their devices with consent, inbox counts,
// how many topics they follow and their latest deliveries, newest first.
func (s *Server) person(c echo.Context) error {
	user, valid := hub.ParseID(c.Param("userId"))
	if !valid {
		return errBadRequest("userId must be a positive integer")
	}
	p, err := s.personOf(c.Request().Context(), user)
	if err != nil {
		return err
	}
	return ok(c, p)
}

func (s *Server) personOf(ctx context.Context, user int64) (person, error) {
	p := person{UserID: user, Devices: []push.Device{}, RecentDeliveries: []delivery.Record{}}
	var err error
	if p.Streams, err = s.hub.UserStreams(ctx, user); err != nil {
		return p, err
	}
	p.Online = p.Streams > 0
	if s.devices != nil {
		if p.Devices, err = s.devicesOf(ctx, user); err != nil {
			return p, err
		}
	}
	if p.Counts, err = s.inbox.Counts(ctx, user); err != nil {
		return p, err
	}
	if s.topics != nil {
		if p.Topics, err = s.topics.UserCount(ctx, user); err != nil {
			return p, err
		}
	}
	if d := s.inbox.Delivery(); d != nil {
		if p.RecentDeliveries, err = d.OfUser(ctx, user); err != nil {
			return p, err
		}
	}
	return p, nil
}
