package client

import (
	"context"
	"net/http"
	"time"
)

// Presence is who is in a room now (schema PresenceList).
type Presence struct {
	OnlineUsers []Online `json:"onlineUsers"`
	Count       int      `json:"count"`
}

// Online is one person in a room and their last sign of life.
type Online struct {
	UserID   int64     `json:"userId"`
	LastSeen time.Time `json:"lastSeen"`
}

// Presence is who is in roomID now. The presence list is a user route, not
// an internal one: userToken is a JWT the hub accepts (signed with its
// JWT_SECRET) for a user ROOM_AUTH lets into the room, which a backend that
// signs its users' tokens mints for itself (a service user).
func (c *Client) Presence(ctx context.Context, roomID int64, userToken string) (Presence, error) {
	var p Presence
	err := c.send(ctx, http.MethodGet, "/api/v1/rooms/"+itoa64(roomID)+"/presence",
		map[string]string{"Authorization": "Bearer " + userToken}, nil, &p)
	return p, err
}
