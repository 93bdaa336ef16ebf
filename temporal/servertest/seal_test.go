//go:build temporalserver

package servertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/temporal"
	"github.com/reinhq/rein/tool"
)

// TestSecretsNotInHistory: a flow whose tool returns a secret (rein.yaml
// secrets:), whose next step reads it and whose third fails with it in
// its error, on a real server. The raw bytes of the run's whole history,
// as the server returns them, never hold the secret: without a key it is
// redacted (the next step reads [REDACTED]), with rein.yaml encryption:
// every payload is sealed (the next step reads the value).
func TestSecretsNotInHistory(t *testing.T) {
	const secret = "tok-c0ffee5eed1234abcd"
	for _, keyed := range []bool{false, true} {
		name := map[bool]string{false: "no key", true: "key"}[keyed]
		t.Run(name, func(t *testing.T) {
			t.Setenv("TEMPORAL_VERSION_CHECK_DISABLED", "1")
			t.Setenv("SHOP_TOKEN", secret)
			dir := t.TempDir()
			reinYAML := "secrets: [SHOP_TOKEN]\n"
			if keyed {
				raw := make([]byte, 32)
				if _, err := rand.Read(raw); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "k1.key"), []byte(base64.StdEncoding.EncodeToString(raw)), 0o600); err != nil {
					t.Fatal(err)
				}
				reinYAML += "encryption: {key_id: k1, key_file: k1.key}\n"
			}
			files := map[string]string{"rein.yaml": reinYAML, "flow.yaml": `name: secretive
steps:
  - {id: get, tool: get, args: {}}
  - {id: use, tool: use, args: {token: "{get.token}"}}
  - {id: refuse, tool: refuse, args: {token: "{get.token}"}, requires: [use], on_error: skip, fallback_value: {}}
`}
			for n, text := range files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p, err := project.Load(dir, &project.LoadOptions{Tools: []tool.Tool{
				tool.Func(tool.Spec{Name: "get", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
					return map[string]any{"token": secret}, nil
				}),
				tool.Func(tool.Spec{Name: "use", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
					return map[string]any{"read": args.(map[string]any)["token"]}, nil
				}),
				tool.Func(tool.Spec{Name: "refuse", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
					return nil, fault.Errorf(fault.Business, "the shop refused token %v", args.(map[string]any)["token"])
				})}})
			if err != nil {
				t.Fatal(err)
			}
			if keyed != (p.Codec() != nil) {
				t.Fatalf("rein.yaml encryption: read %v", p.Codec())
			}
			dc := temporal.NewDataConverter(p.Codec(), nil)
			ts := temporaltest.NewServer(temporaltest.WithT(t), temporaltest.WithBaseClientOptions(client.Options{
				DataConverter: dc, FailureConverter: temporal.NewFailureConverter(p.Codec(), dc)}))
			fs := temporal.NewFlows()
			fs.Add(p)
			ts.NewWorkerWithOptions(queue, func(r worker.Registry) {
				temporal.Register(r, &temporal.Workflow{Flows: fs, Heartbeat: beat}, &temporal.Activities{Flows: fs, Heartbeat: beat, Sealed: keyed})
			}, worker.Options{})
			c := ts.GetDefaultClient()
			if _, err := temporal.StartRun(context.Background(), c, p, map[string]any{}, temporal.StartOptions{RunID: "run-secret", TaskQueue: queue, Namespace: ts.GetDefaultNamespace()}); err != nil {
				t.Fatal(err)
			}
			st := follow(t, c, "run-secret")
			want := `{"read":"` + redact.Mask + `"}`
			if keyed {
				want = `{"read":"` + secret + `"}`
			}
			if st.Status != "succeeded" || string(st.Outputs["use"]) != want {
				t.Fatalf("run: %s %+v, use read %s, want %s", st.Status, st.Error, st.Outputs["use"], want)
			}
			it := c.GetWorkflowHistory(context.Background(), "run-secret", "", false, 0)
			events, sealed := 0, 0
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				raw, err := proto.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString([]byte(secret))[:16])) {
					t.Fatalf("event %d (%s) holds the secret in clear", ev.EventId, ev.EventType)
				}
				if bytes.Contains(raw, []byte("rein-seal.v1.k1.")) {
					sealed++
				}
				events++
			}
			t.Logf("%s: %d events, %d with sealed payloads", name, events, sealed)
			if keyed && sealed == 0 {
				t.Error("no payload of the history is sealed")
			}
		})
	}
}
