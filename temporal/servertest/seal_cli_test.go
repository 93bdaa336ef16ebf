//go:build temporalserver

package servertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/temporal"
)

// TestSealedRunCommands: the rein-temporal program (built here) on a
// folder whose rein.yaml names a key. rein run seals the run's input (a
// secret), the worker every payload: the raw history holds no secret, and
// the run's steps read the value. rein runs show without --project cannot
// open the run's result: it fails, saying which key it needs; with
// --project DIR it shows it. rein codec-server --project DIR answers /decode of the history's
// sealed input with the plain payload.
func TestSealedRunCommands(t *testing.T) {
	const secret = "tok-facade0123456789ab"
	t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"k1.key":     base64.StdEncoding.EncodeToString(key),
		"rein.yaml":  "tools:\n  echo: {command: [cat], effect: none}\nencryption: {key_id: k1, key_file: k1.key}\n",
		"flow.yaml":  "name: sealed\nsteps:\n  - {id: get, tool: echo, args: {token: \"{input.token}\"}}\n  - {id: use, tool: echo, args: {read: \"{get.token}\"}}\n",
		"input.json": `{"token": "` + secret + `"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	prog := program(t)
	dc := temporal.NewDataConverter(p.Codec(), nil)
	ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{
		DataConverter: dc, FailureConverter: temporal.NewFailureConverter(p.Codec(), dc)}))
	fs := temporal.NewFlows()
	fs.Add(p)
	ts.NewWorkerWithOptions("rein", func(r worker.Registry) {
		temporal.Register(r, &temporal.Workflow{Flows: fs}, &temporal.Activities{Flows: fs, Sealed: true})
	}, worker.Options{})
	conn := []string{"--temporal", ts.GetFrontendHostPort(), "--namespace", ts.GetDefaultNamespace()}
	run := commander(t, prog, conn, nil)
	code, out, errs := run("run", dir, "--run-id", "run-sealed", "-o", "json")
	var st struct {
		Outputs map[string]json.RawMessage `json:"outputs"`
	}
	var use map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || json.Unmarshal(st.Outputs["use"], &use) != nil || use["read"] != secret {
		t.Fatalf("rein run: exit %d\n%s\n%s", code, out, errs)
	}
	// the raw history: no secret; the start's input is sealed.
	c := ts.GetDefaultClient()
	it := c.GetWorkflowHistory(context.Background(), "run-sealed", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var input []byte
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := proto.Marshal(ev)
		if bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("event %d (%s) holds the secret in clear", ev.EventId, ev.EventType)
		}
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			input, _ = proto.Marshal(a.GetInput())
		}
	}
	code, out, errs = run("runs", "show", "run-sealed", "-o", "json")
	if both := out + errs; code == 0 || strings.Contains(both, secret) || !strings.Contains(both, "sealed with key k1") || !strings.Contains(both, "--project DIR") {
		t.Fatalf("rein runs show without the key: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = run("runs", "show", "run-sealed", "--project", dir, "-o", "json")
	if code != 0 || !strings.Contains(out, secret) {
		t.Fatalf("rein runs show --project: exit %d\n%s\n%s", code, out, errs)
	}
	// the codec server, on a port of its choosing: its first line names it.
	cs := exec.Command(prog, "codec-server", "--temporal", "--addr", "127.0.0.1:0", "--project", dir, "--cors-origin", "http://localhost:8233")
	stderr, err := cs.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Process.Kill(); _ = cs.Wait() }()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	_, rest, ok := strings.Cut(line, "http://")
	if err != nil || !ok {
		t.Fatalf("codec-server said %q: %v", line, err)
	}
	url := "http://" + strings.Fields(rest)[0]
	var payloads commonpb.Payloads
	if err := proto.Unmarshal(input, &payloads); err != nil || len(payloads.Payloads) != 1 {
		t.Fatalf("the start's input: %v", err)
	}
	dec, err := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: url}).Decode(payloads.Payloads)
	if err != nil || !bytes.Contains(dec[0].Data, []byte(secret)) {
		t.Fatalf("/decode of the sealed input: %v", err)
	}
}
