package cassette_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/model/cassette"
)

// The recorder redacts rather than refusing to record: a cassette of a run
// that hit a 401 is still a useful test, and the message still says what
// went wrong. This test pins down what is stored.
func TestRecordRedactsSecrets(t *testing.T) {
	// Not parallel: it sets an environment variable.
	const (
		envKey    = "env-held-key-0123456789"
		openaiKey = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234"
		headerKey = "hdr-val-9f8e7d6c"
		queryKey  = "AIzaSyA1234567890abcdefghijklmnopqrstu"
		extra     = "configured-elsewhere-42"
	)
	t.Setenv("REIN_TEST_PROVIDER_API_KEY", envKey)
	leaky := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if strings.Contains(req.Prompt(), "401") {
			return nil, fault.BusinessErr(errors.New("openai: 401 Unauthorized: Incorrect API key provided: " + openaiKey +
				"; request headers: Authorization: Bearer " + openaiKey + ", x-api-key: " + headerKey +
				"; url https://example.test/v1?key=" + queryKey + "; set OPENAI_API_KEY"))
		}
		return &model.Response{Text: `{"echo":"` + envKey + " " + extra + `", "note": "key: visible"}`}, nil
	})
	path := filepath.Join(t.TempDir(), "c.json")
	r, err := cassette.Record(leaky, path)
	if err != nil {
		t.Fatal(err)
	}
	r.Redact(extra, "short") // too short to be taken as a secret
	_, err401 := r.Generate(context.Background(), req("a", "trigger a 401"))
	if !strings.Contains(err401.Error(), openaiKey) {
		t.Fatal("the caller's error was changed; only the cassette is redacted")
	}
	resp, err := r.Generate(context.Background(), req("b", "my key is "+envKey+", keep it short"))
	if err != nil || !strings.Contains(resp.Text, envKey) {
		t.Fatalf("the caller's response was changed: %v, %v", resp, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{envKey, openaiKey, headerKey, queryKey, extra} {
		if strings.Contains(string(data), secret) {
			t.Errorf("cassette holds secret %q:\n%s", secret, data)
		}
	}

	c, err := cassette.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	wantErr := "openai: 401 Unauthorized: Incorrect API key provided: [REDACTED]; request headers: Authorization: Bearer [REDACTED], x-api-key: [REDACTED]; url https://example.test/v1?key=[REDACTED]; set OPENAI_API_KEY"
	if got := c.Exchanges[0].Error; got == nil || got.Message != wantErr || got.Class != fault.Business {
		t.Errorf("stored error = %+v\nwant message %s", got, wantErr)
	}
	// Outside error messages only known values and token shapes go; the
	// header-like heuristics would change ordinary text.
	if got, want := c.Exchanges[1].Response.Text, `{"echo":"[REDACTED] [REDACTED]", "note": "key: visible"}`; got != want {
		t.Errorf("stored reply = %s, want %s", got, want)
	}
	if got, want := c.Exchanges[1].Request.Messages[1].Content, "my key is [REDACTED], keep it short"; got != want {
		t.Errorf("stored prompt = %q, want %q", got, want)
	}

	// Keys were computed before redaction, so the cassette still replays.
	p := cassette.NewPlayer(c, path)
	_, err = p.Generate(context.Background(), req("a", "trigger a 401"))
	if fault.ClassOf(err) != fault.Business || err.Error() != wantErr {
		t.Errorf("replayed error = %v", err)
	}
	resp, err = p.Generate(context.Background(), req("b", "my key is "+envKey+", keep it short"))
	if err != nil || resp.Text != c.Exchanges[1].Response.Text {
		t.Errorf("replayed reply = %v, %v; want the redacted one", resp, err)
	}
}
