package rein_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/trace"
)

// A variable rein.yaml secrets: names is hidden like one whose name says
// it is a secret: here a tool it was passed to prints it and fails.
func TestConfigSecretsAreHidden(t *testing.T) {
	// Not parallel: it sets an environment variable.
	t.Setenv("MAILER_LOGIN", "login-value-0123456789")
	dir := t.TempDir()
	files := map[string]string{
		"rein.yaml": "secrets: [MAILER_LOGIN]\ntools:\n  mail:\n    command: [sh, -c, 'cat >/dev/null; echo \"refused $MAILER_LOGIN\" >&2; exit 2']\n    effect: external\n    pass_env: [MAILER_LOGIN]\n",
		"flow.yaml": "name: mailer\nsteps:\n  - {id: send, tool: mail, args: {}}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := clientOf(nil).Run(context.Background(), p, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != trace.RunFailed || res.Error == nil {
		t.Fatalf("status %s, error %v", res.Status, res.Error)
	}
	for _, msg := range []string{res.Error.Message, res.Steps["send"].Error.Message} {
		if strings.Contains(msg, "login-value-0123456789") || !strings.Contains(msg, "refused [REDACTED]") {
			t.Errorf("message %q", msg)
		}
	}
}
