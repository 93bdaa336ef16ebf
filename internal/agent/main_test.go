package agent_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: a turn's calls
// run on goroutines of internal/fanout, which must all have settled.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
