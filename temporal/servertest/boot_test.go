//go:build temporalserver

package servertest

import (
	"testing"

	"go.temporal.io/server/temporaltest"
)

func TestBoot(t *testing.T) {
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	_ = ts.GetDefaultClient()
}
