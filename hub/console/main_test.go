package console_test

import (
	"testing"

	"roomhub/internal/testhub"
)

func TestMain(m *testing.M) { testhub.Main(m) }
