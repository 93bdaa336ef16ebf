package temporal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// blobOf encodes v through a blob codec on dir that stores every payload
// past 64 bytes, and returns the payload the history would hold and the
// blob's sha256.
func blobOf(t *testing.T, dir string, v any) (*commonpb.Payload, string) {
	t.Helper()
	p, err := NewBlobConverter(&BlobCodec{Dir: dir, Threshold: 64}).ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := parseBlobRef(p.Data)
	if err != nil {
		t.Fatalf("%s is not a reference: %v", p.Data, err)
	}
	return p, ref.SHA256
}

// TestBlobRefs: the scan finds a reference in an activity's result, and in
// a failed run's Closed details (its Carry's outputs) nested in a
// failure's cause; a history without references yields none; a damaged
// reference is an error, not a guess.
func TestBlobRefs(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("o", 4096)
	result, sumResult := blobOf(t, dir, map[string]any{"text": big})
	small, err := converter.GetDefaultDataConverter().ToPayload("small")
	if err != nil {
		t.Fatal(err)
	}
	closed := &Closed{Status: &Status{Status: "failed"}, Next: Start{Carry: &Carry{Status: "failed", Outputs: map[string]json.RawMessage{"make": json.RawMessage(`"` + big + big + `"`)}}}}
	dc := NewBlobConverter(&BlobCodec{Dir: dir, Threshold: 64})
	fc := temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc})
	inner := temporal.NewApplicationError("run failed", "Fault", closed)
	failure := fc.ErrorToFailure(temporal.NewApplicationErrorWithCause("wrapped", "Wrap", inner))
	_, sumClosed := blobOf(t, dir, closed)

	events := []*historypb.HistoryEvent{
		{EventId: 1, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{small, result}}}}},
		{EventId: 2, Attributes: &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{Failure: failure}}},
	}
	got := map[string]bool{}
	for _, ev := range events {
		if err := BlobRefs(ev, got); err != nil {
			t.Fatal(err)
		}
	}
	if !got[sumResult] || !got[sumClosed] || len(got) != 2 {
		t.Fatalf("references %v, want %s and %s (the Closed details in the failure's cause)", got, sumResult, sumClosed)
	}

	none := map[string]bool{}
	plain := &historypb.HistoryEvent{EventId: 3, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{small}}}}}
	if err := BlobRefs(plain, none); err != nil || len(none) != 0 {
		t.Fatalf("history without references: %v %v", none, err)
	}

	bad := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(`{"sha256":"zz","size":1}`)}
	damaged := &historypb.HistoryEvent{EventId: 4, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{bad}}}}}
	if err := BlobRefs(damaged, map[string]bool{}); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("damaged reference: %v", err)
	}
}

// setAge sets path's mtime to age ago.
func setAge(t *testing.T, path string, age time.Duration) {
	t.Helper()
	old := time.Now().Add(-age)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestPruneBlobs: over a store with a referenced old blob, an unreferenced
// old one (the stray), an unreferenced recent one, an old and a recent
// temporary file, and files that are not this store's (a README, a blob
// name under the wrong prefix, a file in a non-hex folder, a symlink), a
// dry run deletes nothing and names the stray; the prune deletes only the
// stray and the old temporary file.
func TestPruneBlobs(t *testing.T) {
	dir := t.TempDir()
	_, kept := blobOf(t, dir, strings.Repeat("k", 500))
	_, stray := blobOf(t, dir, strings.Repeat("s", 500))
	_, recent := blobOf(t, dir, strings.Repeat("r", 500))
	path := func(sum string) string { return filepath.Join(dir, sum[:2], sum) }
	setAge(t, path(kept), 48*time.Hour)
	setAge(t, path(stray), 48*time.Hour)
	strayInfo, err := os.Stat(path(stray))
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]string{
		"README":                                 "not a blob",
		filepath.Join("ab", "cd"+stray[2:]):      "a blob name under the wrong prefix",
		filepath.Join("zz", stray):               "a folder that is not a prefix",
		filepath.Join(stray[:2], ".blob-old"):    "an abandoned write",
		filepath.Join(stray[:2], ".blob-recent"): "a write in progress",
		filepath.Join(stray[:2], "notes.txt"):    "someone's file",
	}
	for name, text := range others {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != filepath.Join(stray[:2], ".blob-recent") {
			setAge(t, p, 48*time.Hour)
		}
	}
	link := filepath.Join(dir, kept[:2], strings.Repeat("0", 62)+kept[:2])
	if err := os.Symlink(path(kept), link); err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{kept: true}
	before := time.Now().Add(-24 * time.Hour)

	dry, err := PruneBlobs(dir, refs, before, true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.Blobs != 1 || !slices.Equal(dry.Pruned, []string{stray}) || dry.Bytes != strayInfo.Size() || dry.Temporaries != 1 || dry.Referenced != 1 || dry.Recent != 1 {
		t.Fatalf("dry run: %+v", dry)
	}
	if _, err := os.Stat(path(stray)); err != nil {
		t.Fatalf("the dry run deleted the stray: %v", err)
	}

	res, err := PruneBlobs(dir, refs, before, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.DryRun || res.Blobs != 1 || !slices.Equal(res.Pruned, []string{stray}) || res.Bytes != strayInfo.Size() || res.Temporaries != 1 {
		t.Fatalf("prune: %+v", res)
	}
	if _, err := os.Stat(path(stray)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stray is still there: %v", err)
	}
	for _, p := range []string{path(kept), path(recent), link} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s was deleted: %v", p, err)
		}
	}
	for name := range others {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != (name == filepath.Join(stray[:2], ".blob-old")) {
			t.Fatalf("%s: gone %v (%v)", name, gone, err)
		}
	}
}

// TestPutRefreshesABlob: storing a payload the store already holds makes
// its blob new again, so a prune running meanwhile keeps it; removeBlob
// puts back a blob whose mtime is past the bound by the time it is set
// aside.
func TestPutRefreshesABlob(t *testing.T) {
	dir := t.TempDir()
	_, sum := blobOf(t, dir, strings.Repeat("p", 500))
	path := filepath.Join(dir, sum[:2], sum)
	setAge(t, path, 48*time.Hour)
	blobOf(t, dir, strings.Repeat("p", 500))
	res, err := PruneBlobs(dir, nil, time.Now().Add(-24*time.Hour), false)
	if err != nil || res.Blobs != 0 || res.Recent != 1 {
		t.Fatalf("prune after the blob was stored again: %+v %v", res, err)
	}
	gone, err := removeBlob(path, time.Now().Add(-time.Hour))
	if err != nil || gone {
		t.Fatalf("removeBlob of a fresh blob: gone %v, %v", gone, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the fresh blob was not put back: %v", err)
	}
}

// FuzzBlobRefs: any event the server could send (bytes read as a history
// event) is walked without panicking, and every reference it yields is a
// sha256 of 64 hex digits.
func FuzzBlobRefs(f *testing.F) {
	ref := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(`{"sha256":"` + strings.Repeat("ab", 32) + `","size":10}`)}
	ev := &historypb.HistoryEvent{EventId: 1, Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{Result: &commonpb.Payloads{Payloads: []*commonpb.Payload{ref}}}}}
	seed, err := proto.Marshal(ev)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev historypb.HistoryEvent
		if proto.Unmarshal(data, &ev) != nil {
			return
		}
		refs := map[string]bool{}
		if err := BlobRefs(&ev, refs); err != nil {
			return
		}
		for sum := range refs {
			if len(sum) != 64 || !isLowerHex(sum) {
				t.Fatalf("reference %q is not a sha256", sum)
			}
		}
	})
}
