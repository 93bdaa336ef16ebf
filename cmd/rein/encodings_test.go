package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/store/sqlite"
)

// TestSecretEncodingsNeverStored: a tool that answers with a secret in hex,
// in base64 at every offset (1 and 2 bytes into a 3-byte group too) and as
// it is (holding " and \, so an agent's transcript holds it JSON-escaped
// twice) leaves none of those in the run's journal, its step rows, the
// store's bytes or rein runs show.
func TestSecretEncodingsNeverStored(t *testing.T) {
	// not parallel: it sets the environment rein reads secrets from.
	const secret = `s3cr"et\pass-0123456789+/`
	t.Setenv("REIN_TEST_SECRET", secret)
	dir := t.TempDir()
	b := []byte(secret)
	leaks := map[string]string{
		"hex":         hex.EncodeToString(b),
		"base64 at 1": base64.StdEncoding.EncodeToString(append([]byte("x"), b...)),
		"base64 at 2": base64.RawURLEncoding.EncodeToString(append([]byte("xy"), b...)),
		"base64 tail": base64.StdEncoding.EncodeToString(append(append([]byte{}, b...), "!!"...)),
		"raw":         secret,
	}
	out, err := json.Marshal(leaks)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"answer.json": string(out),
		"agent.yaml":  "name: leaky\nmodel: m\ninstructions: Read the dump, then answer.\ntools:\n  dump:\n",
		"rein.yaml":   "tools:\n  dump: {command: [\"sh\", \"-c\", \"cat >/dev/null; cat answer.json\"], effect: read}\n",
		"script.yaml": `replies:
  - {step: agent, decision: agent, turn: 1, tool_calls: [{name: dump, args: {}}]}
  - {step: agent, decision: agent, turn: 2, raw: "done"}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	db := filepath.Join(dir, "rein.db")
	code, stdout, stderr := cli(t, "agent", dir, "dump it", "--db", db, "-o", "json")
	var res agentResultJSON
	decodeOne(t, stdout, &res)
	if code != exitOK {
		t.Fatalf("agent: exit %d; stderr: %s", code, stderr)
	}
	places := map[string]string{"rein agent": stdout + stderr}
	for _, args := range [][]string{{"runs", "show", res.RunID}, {"runs", "show", res.RunID, "-o", "json"}} {
		_, o, e := cli(t, append(args, "--db", db)...)
		places[strings.Join(args, " ")] = o + e
	}
	st, err := sqlite.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := st.Events(context.Background(), res.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := st.Steps(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := json.Marshal(events)
	rows, _ := json.Marshal(steps)
	places["journal"], places["step rows"] = string(journal), string(rows)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{db, db + "-wal"} {
		b, _ := os.ReadFile(f)
		places[filepath.Base(f)] = string(b)
	}
	once, _ := json.Marshal(secret)
	twice, _ := json.Marshal(string(once))
	leaks["json once"] = strings.Trim(string(once), `"`)
	leaks["json twice"] = strings.Trim(string(twice), `"`)
	for where, text := range places {
		for form, v := range leaks {
			if strings.Contains(strings.ToLower(text), strings.ToLower(v)) {
				t.Errorf("%s holds the secret (%s)", where, form)
			}
		}
	}
	if !strings.Contains(places["journal"], "[REDACTED]") {
		t.Errorf("the journal holds no redaction: did the tool answer?\n%s", places["journal"])
	}
}
