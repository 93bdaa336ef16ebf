package temporal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/tool"
)

// TestBlobCodec: a payload past the threshold is stored in the blob
// directory and only its reference (under 200 bytes) is encoded; it reads
// back equal; a small one passes unchanged; a reader without the store,
// or with a damaged blob, gets an error that says so.
func TestBlobCodec(t *testing.T) {
	dir := t.TempDir()
	dc := NewBlobConverter(&BlobCodec{Dir: dir, Threshold: 1024})
	big := strings.Repeat("x", 4096)
	p, err := dc.ToPayload(map[string]any{"text": big})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Metadata[converter.MetadataEncoding]) != blobEncoding || len(p.Data) > 200 {
		t.Fatalf("big payload encoded as %s, %d bytes", p.Metadata[converter.MetadataEncoding], len(p.Data))
	}
	var back map[string]any
	if err := dc.FromPayload(p, &back); err != nil || back["text"] != big {
		t.Fatalf("read back: %v (%d bytes)", err, len(back["text"].(string)))
	}
	small, err := dc.ToPayload("small")
	if err != nil || string(small.Metadata[converter.MetadataEncoding]) == blobEncoding {
		t.Fatalf("small payload: %v %s", err, small.Metadata[converter.MetadataEncoding])
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	if len(files) != 1 {
		t.Fatalf("blobs %v, want one", files)
	}
	// the same payload again: the same blob, not a second.
	if _, err := dc.ToPayload(map[string]any{"text": big}); err != nil {
		t.Fatal(err)
	}
	if again, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(again) != 1 {
		t.Errorf("blobs after the same payload again: %v", again)
	}
	elsewhere := NewBlobConverter(&BlobCodec{Dir: t.TempDir()})
	if err := elsewhere.FromPayload(p, &back); err == nil || !strings.Contains(err.Error(), "not in the blob store") {
		t.Errorf("a reader without the store: %v", err)
	}
	if err := os.WriteFile(files[0], []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dc.FromPayload(p, &back); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged blob: %v", err)
	}
	// a payload nobody stored by reference passes Decode unchanged.
	plain := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte("json/plain")}, Data: []byte(`1`)}
	out, err := (&BlobCodec{Dir: dir}).Decode([]*commonpb.Payload{plain})
	if err != nil || out[0] != plain {
		t.Errorf("a plain payload: %v", err)
	}
}

// TestBlobsInARun: a run whose step outputs more than the threshold, in
// the SDK's test environment with the blob converter: the output goes to
// the store, and the next step still reads it.
func TestBlobsInARun(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("y", 8192)
	p := load(t, `name: big
steps:
  - {id: make, tool: make, args: {}, max_output_bytes: 100000}
  - {id: read, tool: size, args: {text: "{make.text}"}}
`, tool.Func(tool.Spec{Name: "make", Effect: tool.EffectRead}, func(context.Context, any) (any, error) {
		return map[string]any{"text": big}, nil
	}), tool.Func(tool.Spec{Name: "size", Effect: tool.EffectRead}, func(_ context.Context, args any) (any, error) {
		return map[string]any{"len": float64(len(args.(map[string]any)["text"].(string)))}, nil
	}))
	h := newHarness(t, p)
	h.env.SetDataConverter(NewBlobConverter(&BlobCodec{Dir: dir, Threshold: 4096}))
	st := h.run(map[string]any{})
	if st.Status != "succeeded" || output(t, st, "read")["len"] != float64(len(big)) {
		t.Fatalf("run: %+v %+v", st, st.Error)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(files) == 0 {
		t.Error("no blob stored for an output past the threshold")
	}
}

// FuzzParseBlobRef: a reference read from a history is bounded and
// parsed without panic; one it accepts names a well-formed blob.
func FuzzParseBlobRef(f *testing.F) {
	f.Add([]byte(`{"sha256":"` + strings.Repeat("ab", 32) + `","size":12}`))
	f.Add([]byte(`{"sha256":"zz","size":-1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ref, err := parseBlobRef(data)
		if err != nil {
			return
		}
		if len(ref.SHA256) != 64 || ref.Size < 0 || ref.Size > maxBlob {
			t.Fatalf("accepted %q as %+v", data, ref)
		}
	})
}
