package api_test

import (
	"testing"

	"roomhub/internal/testhub"
)

// The tests of the HTTP layer: routes, envelopes, auth and limits, each on a
// hub testhub starts. The features' scenarios live beside their packages.
func TestMain(m *testing.M) { testhub.Main(m) }
