package http_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	reinhttp "github.com/reinhq/rein/server/http"
)

// A write a model's value drives waits for a person by the default rules:
// the inbox says which rule asked.
func TestInboxSaysWhichRuleAsked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gated")
	if err := os.CopyFS(dir, os.DirFS("testdata/gated")); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{dirs: []string{dir}})
	s := e.start("", map[string]any{"flow": "gated", "input": map[string]any{"customer": "acme"}})
	if s.Status != "waiting" {
		t.Fatalf("gated run is %s, want waiting", s.Status)
	}
	var inbox struct {
		Approvals []reinhttp.PendingApproval `json:"approvals"`
	}
	e.do("GET", "/v1/approvals", "", nil).json(t, &inbox)
	if len(inbox.Approvals) != 1 || inbox.Approvals[0].Tool != "record" || !strings.Contains(inbox.Approvals[0].Why, "rule") {
		t.Fatalf("inbox = %s", jsonOf(inbox))
	}
}
