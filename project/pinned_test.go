package project_test

import (
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/store"
)

// A run that pinned no flow (rein mcp's ledger of served calls) is not
// loaded as a flow file named after it: the error says what the run is.
func TestLoadPinnedRunWithoutAFlow(t *testing.T) {
	t.Parallel()
	_, err := project.LoadPinned(&store.Run{ID: "r1", Flow: "mcp"}, nil)
	if err == nil || fault.ClassOf(err) != fault.Business || !strings.Contains(err.Error(), "run r1 (flow mcp) pinned no flow") ||
		!strings.Contains(err.Error(), "rein runs show r1") {
		t.Fatalf("LoadPinned: %v", err)
	}
}
