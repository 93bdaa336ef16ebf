package workflowtool_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/store/sqlite"
)

// TestSealedSubmission: with rein.yaml encryption:, a submission that
// holds a secret is sealed, not only redacted: the task's next step gets
// the value as submitted, and the database never holds it in clear.
func TestSealedSubmission(t *testing.T) {
	// not parallel: it sets the environment.
	const secret = "submitted-token-6e2d90aa"
	t.Setenv("WF_SUBMIT_TOKEN", secret)
	dir := t.TempDir()
	use := filepath.Join(dir, "use.json")
	writeFile(t, filepath.Join(dir, "flow.yaml"), `name: sealed
steps:
  - {id: parse, skill: parse-input}
  - {id: use, tool: use, args: {token: "{parse.token}"}, requires: [parse]}
tools:
  use:
    command: ["sh", "-c", "cat > `+use+`; echo '{\"ok\": true}'"]
    effect: write
`)
	writeFile(t, filepath.Join(dir, "rein.key"), base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))+"\n")
	writeFile(t, filepath.Join(dir, "rein.yaml"), "encryption: {key_id: k1, key_file: rein.key}\n")
	db := filepath.Join(t.TempDir(), "rein.db")
	st, err := sqlite.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := newWorkflow(t, dir, st)
	task := mustDo(t, w, `{"action":"start","session_id":"s","input":{}}`).TaskID
	a := mustDo(t, w, fmt.Sprintf(`{"action":"submit","task_id":%q,"step_id":"parse","data":{"token":%q}}`, task, secret))
	if a.Status != "succeeded" {
		t.Fatalf("after the submission: %s", a.Status)
	}
	got, err := os.ReadFile(use)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), secret) {
		t.Errorf("the task's next step got %s, want the token as submitted", got)
	}
	for _, f := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the submitted secret in clear", filepath.Base(f))
		}
	}
}
