package temporal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Large payloads by reference. A run's outputs travel in its workflow's
// history (activity results, the inputs of later attempts, the run's
// result): a large one would bloat every history that carries it, and
// Temporal refuses payloads past its limit (2 MiB by default). BlobCodec
// is a payload codec (converter.PayloadCodec) that puts each payload
// larger than its threshold into a content-addressed blob store (a
// directory every worker and starter of the namespace shares) and writes
// only a reference into the history. Workers and clients that read such a
// history need the same store (rein worker|run|runs --blobs DIR).

// blobEncoding is the metadata encoding of a payload stored by reference.
const blobEncoding = "rein/blob-ref"

// DefaultBlobThreshold is the size past which BlobCodec stores a payload
// by reference: 256 KiB.
const DefaultBlobThreshold = 256 << 10

// maxBlob bounds a blob read back: Temporal's own hard limit on a payload
// is far below it, so a larger file is not one this codec wrote.
const maxBlob = 1 << 30

// BlobCodec stores payloads larger than Threshold in Dir, by the sha256
// of their encoding, and leaves a reference in their place.
type BlobCodec struct {
	// Dir holds the blobs: Dir/ab/abcdef… (sha256 hex). Shared by every
	// worker and client of the runs.
	Dir string
	// Threshold is the size in bytes (of the encoded payload) past which a
	// payload goes to Dir. Zero: DefaultBlobThreshold.
	Threshold int
}

// blobRef is what the history holds for a payload stored by reference.
type blobRef struct {
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
}

// NewBlobConverter is the default data converter with c's codec: what a
// client (client.Options.DataConverter) and so its workers use.
func NewBlobConverter(c *BlobCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Encode stores each payload past the threshold and returns references
// in their place; the others pass unchanged.
func (c *BlobCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	limit := c.Threshold
	if limit <= 0 {
		limit = DefaultBlobThreshold
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if proto.Size(p) <= limit {
			out[i] = p
			continue
		}
		raw, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("temporal: blob codec: encode a payload: %w", err)
		}
		sum := sha256.Sum256(raw)
		ref := blobRef{SHA256: hex.EncodeToString(sum[:]), Size: len(raw)}
		if err := c.put(ref.SHA256, raw); err != nil {
			return payloads, err
		}
		data, _ := json.Marshal(ref)
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: data}
	}
	return out, nil
}

// Decode reads back the payloads stored by reference (checking their
// sha256); the others pass unchanged.
func (c *BlobCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.Metadata[converter.MetadataEncoding]) != blobEncoding {
			out[i] = p
			continue
		}
		ref, err := parseBlobRef(p.Data)
		if err != nil {
			return payloads, err
		}
		raw, err := c.get(ref)
		if err != nil {
			return payloads, err
		}
		q := &commonpb.Payload{}
		if err := proto.Unmarshal(raw, q); err != nil {
			return payloads, fmt.Errorf("temporal: blob %s is not a payload: %w", ref.SHA256, err)
		}
		out[i] = q
	}
	return out, nil
}

// parseBlobRef reads a reference from a history: {"sha256": 64 hex
// digits, "size": bytes}; bounded, and its errors say what is wrong.
func parseBlobRef(data []byte) (blobRef, error) {
	var ref blobRef
	if len(data) > 256 {
		return ref, fmt.Errorf("temporal: blob reference of %d bytes: not one this codec wrote (at most 256)", len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		return ref, fmt.Errorf("temporal: blob reference %q: %w", data, err)
	}
	if b, err := hex.DecodeString(ref.SHA256); err != nil || len(b) != sha256.Size {
		return ref, fmt.Errorf("temporal: blob reference %q: sha256 must be 64 hex digits", data)
	}
	if ref.Size < 0 || ref.Size > maxBlob {
		return ref, fmt.Errorf("temporal: blob reference %q: size %d out of range (0 to %d)", data, ref.Size, maxBlob)
	}
	return ref, nil
}

// path is the file of blob sum.
func (c *BlobCodec) path(sum string) string { return filepath.Join(c.Dir, sum[:2], sum) }

// put writes blob sum (raw) unless Dir holds it: to a temporary file,
// then renamed, so that a reader never sees half a blob.
func (c *BlobCodec) put(sum string, raw []byte) error {
	if c.Dir == "" {
		return errors.New("temporal: blob codec has no directory (--blobs DIR)")
	}
	dst := c.path(sum)
	if _, err := os.Stat(dst); err == nil {
		// Stored already: refresh its mtime, which a blob prune reads as
		// "just written"; when that fails (pruned since, another owner),
		// write it again.
		now := time.Now()
		if os.Chtimes(dst, now, now) == nil {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("temporal: blob store %s: %w", c.Dir, err)
	}
	f, err := os.CreateTemp(filepath.Dir(dst), ".blob-*")
	if err != nil {
		return fmt.Errorf("temporal: blob store %s: %w", c.Dir, err)
	}
	_, werr := f.Write(raw)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), dst)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("temporal: blob store %s: write blob %s: %w", c.Dir, sum, werr)
	}
	return nil
}

// get reads blob ref back and checks its size and sha256.
func (c *BlobCodec) get(ref blobRef) ([]byte, error) {
	f, err := os.Open(c.path(ref.SHA256))
	if err != nil {
		return nil, fmt.Errorf("temporal: blob %s is not in the blob store %q: give this worker or client the store the run's workers write to (--blobs DIR): %w", ref.SHA256, c.Dir, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, int64(ref.Size)+1))
	if err != nil {
		return nil, fmt.Errorf("temporal: read blob %s: %w", ref.SHA256, err)
	}
	sum := sha256.Sum256(raw)
	if len(raw) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fmt.Errorf("temporal: blob %s in %s is damaged (its content does not match its sha256)", ref.SHA256, c.Dir)
	}
	return raw, nil
}
