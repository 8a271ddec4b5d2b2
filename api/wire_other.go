//go:build !linux

package api

import (
	"errors"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

// Off Linux, streams are not hijacked: net/http's response carries them.

type poller struct{}

func newPoller() (*poller, error) { return nil, errors.New("hijacked streams need Linux's epoll") }

func (p *poller) Close() {}

type rawWire struct{ hub.Wire }

func (w *rawWire) watch(func()) {}

func (s *Server) hijack(echo.Context) (*rawWire, bool) { return nil, false }
