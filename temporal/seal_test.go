package temporal

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/internal/engine"
	"github.com/reinhq/rein/journal"
	"github.com/reinhq/rein/project"
	"github.com/reinhq/rein/redact"
	"github.com/reinhq/rein/redact/seal"
	"github.com/reinhq/rein/tool"
)

// newKeyText is a fresh 256-bit key as base64 text (a key_file's text).
func newKeyText(t testing.TB) []byte {
	t.Helper()
	raw := make([]byte, seal.KeySize)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

func newKey(t testing.TB, id string) seal.Key {
	t.Helper()
	k, err := seal.ParseKey(id, newKeyText(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newCodec(t testing.TB, cur seal.Key, old ...seal.Key) *seal.Codec {
	t.Helper()
	c, err := seal.New(cur, old...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSealCodec: every payload is sealed (its key id in its metadata, its
// text nowhere in it) and opens back equal; a rotated-out key still opens
// what it sealed; a payload of a key not held fails with the seal
// package's error; an unsealed payload (written before a key) passes.
func TestSealCodec(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a39281706"
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	dc := NewDataConverter(newCodec(t, k1), nil)
	p, err := dc.ToPayload(map[string]any{"token": secret})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[converter.MetadataEncoding]) != sealEncoding || string(p.Metadata[MetadataKeyID]) != "k1" {
		t.Fatalf("sealed payload's metadata: %q", p.Metadata)
	}
	if raw, _ := proto.Marshal(p); bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte("json/plain")) {
		t.Fatalf("sealed payload holds its text in clear: %q", raw)
	}
	var back map[string]any
	if err := dc.FromPayload(p, &back); err != nil || back["token"] != secret {
		t.Fatalf("open: %v %v", err, back)
	}
	// rotated: k2 seals, k1 (old) still opens.
	rotated := NewDataConverter(newCodec(t, k2, k1), nil)
	back = nil
	if err := rotated.FromPayload(p, &back); err != nil || back["token"] != secret {
		t.Fatalf("open with the old key: %v %v", err, back)
	}
	// a reader without keys seals nothing, and says which key a sealed
	// payload needs.
	if q, err := NewDataConverter(nil, nil).ToPayload("x"); err != nil || string(q.Metadata[converter.MetadataEncoding]) == sealEncoding {
		t.Fatalf("no keys: %v %q", err, q.Metadata)
	}
	if err := NewDataConverter(nil, nil).FromPayload(p, &back); err == nil || !strings.Contains(err.Error(), "sealed with key k1, and no encryption key is configured") {
		t.Fatalf("a reader without keys: %v", err)
	}
	// a reader holding k2 alone.
	err = NewDataConverter(newCodec(t, k2), nil).FromPayload(p, &back)
	var missing *seal.MissingKeyError
	if !errors.As(err, &missing) || missing.KeyID != "k1" || !strings.Contains(err.Error(), "name key k1 in the rein.yaml encryption:") {
		t.Fatalf("a reader without k1: %v", err)
	}
	// an unsealed payload passes.
	plain, err := converter.GetDefaultDataConverter().ToPayload("before")
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := dc.FromPayload(plain, &s); err != nil || s != "before" {
		t.Fatalf("an unsealed payload: %v %q", err, s)
	}
	// Encode does not seal twice.
	again, err := (&SealCodec{Keys: newCodec(t, k1)}).Encode([]*commonpb.Payload{p})
	if err != nil || again[0] != p {
		t.Fatalf("a sealed payload encoded again: %v", err)
	}
	// a damaged one says where.
	bad := proto.Clone(p).(*commonpb.Payload)
	bad.Data = append(bad.Data[:len(bad.Data)-4:len(bad.Data)-4], "AAAA"...)
	var se *seal.Error
	if err := dc.FromPayload(bad, &back); !errors.As(err, &se) {
		t.Fatalf("a damaged payload: %v", err)
	}
}

// TestSealWithBlobs: composed with the blob codec, a payload is sealed
// first: the blob store holds it sealed, and it reads back.
func TestSealWithBlobs(t *testing.T) {
	dir := t.TempDir()
	secret := "tok-" + strings.Repeat("s3cr3t", 1000)
	dc := NewDataConverter(newCodec(t, newKey(t, "k1")), &BlobCodec{Dir: dir, Threshold: 1024})
	p, err := dc.ToPayload(map[string]any{"token": secret})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[converter.MetadataEncoding]) != blobEncoding {
		t.Fatalf("a large payload is not stored by reference: %q", p.Metadata)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(files) != 1 {
		t.Fatalf("blobs: %v", files)
	}
	blob, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(blob, []byte("s3cr3t")) || !bytes.Contains(blob, []byte(seal.Prefix+"k1.")) {
		t.Fatalf("the blob is not sealed (%d bytes)", len(blob))
	}
	var back map[string]any
	if err := dc.FromPayload(p, &back); err != nil || back["token"] != secret {
		t.Fatalf("read back: %v", err)
	}
}

// recorder is the outermost codec of a test's converter: it keeps every
// payload as the history would hold it.
type recorder struct {
	mu   sync.Mutex
	seen [][]byte
}

func (r *recorder) Encode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range ps {
		raw, err := proto.Marshal(p)
		if err != nil {
			return ps, err
		}
		r.seen = append(r.seen, raw)
	}
	return ps, nil
}

func (r *recorder) Decode(ps []*commonpb.Payload) ([]*commonpb.Payload, error) { return ps, nil }

// holding is how many recorded payloads hold s.
func (r *recorder) holding(s string) (n, of int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, raw := range r.seen {
		if bytes.Contains(raw, []byte(s)) {
			n++
		}
	}
	return n, len(r.seen)
}

// secretFlow is a flow whose tool get returns the secret of SHOP_TOKEN
// (rein.yaml secrets:), which step use reads; reinYAML is the rest of
// its rein.yaml.
func secretFlow(t *testing.T, secret, reinYAML string, files map[string][]byte) *project.Project {
	t.Helper()
	t.Setenv("SHOP_TOKEN", secret)
	dir := t.TempDir()
	files["flow.yaml"] = []byte(`name: secretive
steps:
  - {id: get, tool: get, args: {}}
  - {id: use, tool: use, args: {token: "{get.token}"}}
`)
	files["rein.yaml"] = []byte("secrets: [SHOP_TOKEN]\n" + reinYAML)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
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
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sealedHarness is newHarness with the converter of keys (recorded by
// rec) and its activities' Sealed as the worker sets it.
func sealedHarness(t *testing.T, p *project.Project, keys *seal.Codec, rec *recorder) *harness {
	var s testsuite.WorkflowTestSuite
	env := newTestEnv(&s)
	fs := NewFlows()
	fs.Add(p)
	Register(env, &Workflow{Flows: fs}, &Activities{Flows: fs, Sealed: keys != nil})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "run-1"})
	cs := append([]converter.PayloadCodec{rec}, Codecs(keys, nil)...)
	env.SetDataConverter(converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), cs...))
	return &harness{t: t, env: env, p: p}
}

// TestSecretsInHistory: a tool returns a secret. Without a key the
// activity's result is redacted: no payload holds it, and the next step
// reads [REDACTED]. With rein.yaml encryption: every payload is sealed:
// none holds it, and the next step reads the value.
func TestSecretsInHistory(t *testing.T) {
	const secret = "tok-5e1b7c9d2a4f8e3b6c0d"
	t.Run("no key", func(t *testing.T) {
		p := secretFlow(t, secret, "", map[string][]byte{})
		rec := &recorder{}
		st := sealedHarness(t, p, nil, rec).run(map[string]any{})
		if st.Status != "succeeded" || output(t, st, "use")["read"] != redact.Mask {
			t.Fatalf("run: %s %+v", st.Status, st.Outputs)
		}
		if n, of := rec.holding(secret); n != 0 || of == 0 {
			t.Fatalf("%d of %d payloads hold the secret", n, of)
		}
	})
	t.Run("key", func(t *testing.T) {
		p := secretFlow(t, secret, "encryption: {key_id: k1, key_file: k1.key}\n", map[string][]byte{"k1.key": newKeyText(t)})
		if p.Codec() == nil {
			t.Fatal("rein.yaml encryption: read no key")
		}
		rec := &recorder{}
		st := sealedHarness(t, p, p.Codec(), rec).run(map[string]any{})
		if st.Status != "succeeded" || output(t, st, "use")["read"] != secret {
			t.Fatalf("run: %s %+v", st.Status, st.Outputs)
		}
		if n, of := rec.holding(secret); n != 0 || of == 0 {
			t.Fatalf("%d of %d payloads hold the secret", n, of)
		}
		if n, of := rec.holding(seal.Prefix + "k1."); n != of {
			t.Fatalf("%d of %d payloads are sealed", n, of)
		}
	})
}

// TestHideError: an attempt's failure reaches the workflow with its
// message and detail redacted, and without the cause that held it.
func TestHideError(t *testing.T) {
	const secret = "tok-0a9b8c7d6e5f4a3b2c1d"
	red := redact.New(secret)
	err := hideError(red.String, toApplicationError(errors.New("charge failed: bad token "+secret)))
	if strings.Contains(err.Error(), secret) || errors.Unwrap(err) != nil {
		t.Fatalf("hidden error: %v (cause %v)", err, errors.Unwrap(err))
	}
	f, lost, _ := failureOf(err)
	if lost || !strings.Contains(f.Message, redact.Mask) || strings.Contains(f.Message, secret) || f.Class == "" {
		t.Fatalf("failure read back: %+v", f)
	}
}

// FuzzSealDecode: a payload read from a history that says it is sealed
// is opened without panic, whatever its bytes: a forged or damaged one is
// an error; one that opens is a payload this codec sealed.
func FuzzSealDecode(f *testing.F) {
	keys := newCodec(f, newKey(f, "k1"))
	c := &SealCodec{Keys: keys}
	good, err := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: []byte(`"x"`)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[0].Data)
	f.Add([]byte(seal.Prefix + "k1."))
	f.Add([]byte(seal.Prefix + "k9.AAAA"))
	f.Add([]byte("rein-seal.v2.k1.x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(sealEncoding)}, Data: data}
		out, err := c.Decode([]*commonpb.Payload{in})
		if err != nil {
			return
		}
		if string(out[0].GetMetadata()[converter.MetadataEncoding]) == sealEncoding {
			t.Fatalf("%q opened to a sealed payload", data)
		}
	})
}

// TestFlowsKeys: a worker seals with the one key its folders name;
// folders naming two current keys are refused, naming which.
func TestFlowsKeys(t *testing.T) {
	folder := func(name, keyID string) *project.Project {
		dir := t.TempDir()
		for n, text := range map[string][]byte{
			"flow.yaml": []byte("name: " + name + "\nsteps:\n  - {id: a, tool: echo, args: {}}\n"),
			"rein.yaml": []byte("tools:\n  echo: {command: [cat], effect: none}\nencryption: {key_id: " + keyID + ", key_file: k.key}\n"),
			"k.key":     newKeyText(t),
		} {
			if err := os.WriteFile(filepath.Join(dir, n), text, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		p, err := project.Load(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	fs := NewFlows()
	fs.Add(folder("a", "k1"))
	if k, err := fs.Keys(); err != nil || k.KeyID() != "k1" {
		t.Fatalf("one folder's key: %v %v", k, err)
	}
	fs.Add(folder("b", "k2"))
	if _, err := fs.Keys(); err == nil || !strings.Contains(err.Error(), "flow a's rein.yaml seals with key k1 and flow b's with key k2") {
		t.Fatalf("two keys: %v", err)
	}
}

// BenchmarkSealCodec seals and opens a 4 KiB step output, as every
// payload of a keyed run is; it reports the sealed payload's size against
// the plain one's.
func BenchmarkSealCodec(b *testing.B) {
	c := &SealCodec{Keys: newCodec(b, newKey(b, "k1"))}
	plain, err := converter.GetDefaultDataConverter().ToPayload(map[string]any{"text": strings.Repeat("a", 4096)})
	if err != nil {
		b.Fatal(err)
	}
	in := []*commonpb.Payload{plain}
	var sealedSize int
	b.ReportAllocs()
	for b.Loop() {
		enc, err := c.Encode(in)
		if err != nil {
			b.Fatal(err)
		}
		sealedSize = proto.Size(enc[0])
		if _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sealedSize)/float64(proto.Size(plain)), "sealed/plain")
}

// TestHideWork: an attempt's heartbeat details (which the server writes
// into the history when the worker is lost) hold no secret in clear: a
// plan step's output and an effect's resource are redacted without a key,
// and left to the sealing codec with one.
func TestHideWork(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a39281706"
	p := secretFlow(t, secret, "", map[string][]byte{})
	e := &entry{p: p}
	w := lostWork{Effects: []journal.Effect{{StepID: "get", Key: "run/get/1", Tool: "get", Writes: []string{"token/" + secret}}},
		InFlight: []engine.PlanCall{{Tool: "use", Key: "run/use/1/" + secret}}}
	got := (&Activities{}).hideWork(e)(w)
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) || len(got.Effects) != 1 || !strings.Contains(got.Effects[0].Writes[0], redact.Mask) {
		t.Errorf("details without a key: %s", raw)
	}
	if kept := (&Activities{Sealed: true}).hideWork(e)(w); kept.Effects[0].Writes[0] != "token/"+secret {
		t.Errorf("a sealing worker changed the details: %+v", kept)
	}
}
