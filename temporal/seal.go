package temporal

import (
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"

	"github.com/reinhq/rein/redact/seal"
)

// Secrets at rest. A run's history is this backend's journal: what a step
// returned, a run's input and result, an update's decision all travel in
// it as payloads. With rein.yaml encryption: the workers' and clients'
// data converter seals every payload (SealCodec, AES-256-GCM through
// package redact/seal), so the history (and the blob store, which holds
// sealed payloads) never holds a secret in clear; only those holding a
// key read it (the workers, rein's commands, the codec server that lets
// the Temporal UI show it). Without a key, the activities redact what
// they return (hide.go).

// sealEncoding is the metadata encoding of a sealed payload; its data is
// a seal.Prefix text sealing the whole encoded payload (its metadata and
// data).
const sealEncoding = "binary/rein-seal"

// MetadataKeyID is the metadata entry naming the key a payload was sealed
// with (also in the sealed text itself, which is what Decode trusts).
const MetadataKeyID = "rein-key-id"

// sealAAD binds a sealed payload to this use: a payload sealed for a
// local journal does not open as a Temporal payload, nor the reverse.
var sealAAD = []byte("temporal-payload")

// SealCodec is a converter.PayloadCodec that seals every payload with
// Keys's current key and opens those sealed with any key Keys holds. A
// payload that is not sealed (written before a key was configured) passes
// Decode unchanged. With nil Keys it seals nothing, and a sealed payload
// fails Decode saying which key it needs.
type SealCodec struct {
	Keys *seal.Codec
}

// Encode seals each payload; one already sealed passes unchanged (all do
// with nil Keys).
func (c *SealCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	if c.Keys == nil {
		return payloads, nil
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) == sealEncoding {
			out[i] = p
			continue
		}
		raw, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("temporal: seal codec: encode a payload: %w", err)
		}
		sealed, err := c.Keys.Seal(raw, sealAAD)
		if err != nil {
			return payloads, fmt.Errorf("temporal: seal codec: %w", err)
		}
		out[i] = &commonpb.Payload{Metadata: map[string][]byte{
			converter.MetadataEncoding: []byte(sealEncoding),
			MetadataKeyID:              []byte(c.Keys.KeyID()),
		}, Data: []byte(sealed)}
	}
	return out, nil
}

// Decode opens each sealed payload; the others pass unchanged. A payload
// sealed with a key Keys does not hold fails with the seal package's
// *seal.MissingKeyError (wrapped, naming what to do); a damaged one with
// its *seal.Error.
func (c *SealCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != sealEncoding {
			out[i] = p
			continue
		}
		q, err := c.open(p.GetData())
		if err != nil {
			return payloads, err
		}
		out[i] = q
	}
	return out, nil
}

// open reads one sealed payload back.
func (c *SealCodec) open(data []byte) (*commonpb.Payload, error) {
	raw, err := c.Keys.Open(string(data), sealAAD)
	if err != nil {
		var missing *seal.MissingKeyError
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("temporal: a payload of this run does not open: %w: name key %s in the rein.yaml encryption: (key_id, or under old_keys) of this worker's or client's project (--project DIR)", err, missing.KeyID)
		}
		return nil, fmt.Errorf("temporal: a payload of this run does not open: %w", err)
	}
	q := &commonpb.Payload{}
	if err := proto.Unmarshal(raw, q); err != nil {
		return nil, fmt.Errorf("temporal: a sealed payload holds no payload: %w", err)
	}
	if string(q.GetMetadata()[converter.MetadataEncoding]) == sealEncoding {
		return nil, errors.New("temporal: a sealed payload holds another sealed payload: not one this codec wrote")
	}
	return q, nil
}

// Codecs are the payload codecs of a worker or client, in the order
// converter.NewCodecDataConverter and converter.NewPayloadCodecHTTPHandler
// take them: encoding seals first (with keys; nil keys seal nothing, but
// a sealed payload read then says which key it needs), then stores large
// payloads by reference (blobs, when not nil), so that blobs are sealed
// too; decoding goes the other way.
func Codecs(keys *seal.Codec, blobs *BlobCodec) []converter.PayloadCodec {
	var out []converter.PayloadCodec
	if blobs != nil {
		out = append(out, blobs)
	}
	return append(out, &SealCodec{Keys: keys})
}

// NewDataConverter is the default data converter with Codecs(keys, blobs):
// what a client (client.Options.DataConverter) and so its workers use.
func NewDataConverter(keys *seal.Codec, blobs *BlobCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), Codecs(keys, blobs)...)
}

// NewFailureConverter is the failure converter of a client that seals
// (keys not nil): a failure's message and stack trace travel in its
// encoded attributes, a payload dc seals, rather than in clear. Nil
// without keys (the SDK's default).
func NewFailureConverter(keys *seal.Codec, dc converter.DataConverter) converter.FailureConverter {
	if keys == nil {
		return nil
	}
	return temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})
}
