package temporal

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestCodecServer: the codec server speaks Temporal's codec protocol:
// /decode of a sealed payload (as the UI posts it) answers the plain one,
// /encode seals; the UI's origin gets its CORS headers and preflight; a
// payload of a key the server lacks is refused.
func TestCodecServer(t *testing.T) {
	keys := newCodec(t, newKey(t, "k1"))
	srv := httptest.NewServer(CodecHandler(keys, nil, "http://localhost:8233"))
	defer srv.Close()
	plain, err := converter.GetDefaultDataConverter().ToPayload(map[string]any{"token": "tok-42"})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := (&SealCodec{Keys: keys}).Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	// /decode, as the UI posts it: {"payloads": [...]} in protobuf JSON.
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://localhost:8233")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "http://localhost:8233" {
		t.Fatalf("/decode: %s %q %s", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"), raw)
	}
	var got commonpb.Payloads
	if err := protojson.Unmarshal(raw, &got); err != nil || len(got.Payloads) != 1 {
		t.Fatalf("/decode answered %s: %v", raw, err)
	}
	var v map[string]any
	if err := json.Unmarshal(got.Payloads[0].Data, &v); err != nil || v["token"] != "tok-42" ||
		string(got.Payloads[0].Metadata[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		t.Fatalf("/decode gave %q (%v)", got.Payloads[0].Data, err)
	}
	// /encode through the SDK's own remote codec, read back locally.
	remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: srv.URL})
	enc, err := remote.Encode([]*commonpb.Payload{plain})
	if err != nil || string(enc[0].Metadata[converter.MetadataEncoding]) != sealEncoding {
		t.Fatalf("/encode: %v", err)
	}
	if dec, err := (&SealCodec{Keys: keys}).Decode(enc); err != nil || !bytes.Equal(dec[0].Data, plain.Data) {
		t.Fatalf("what /encode sealed does not open: %v", err)
	}
	// the browser's preflight.
	pre, _ := http.NewRequest(http.MethodOptions, srv.URL+"/decode", nil)
	pre.Header.Set("Origin", "http://localhost:8233")
	presp, err := http.DefaultClient.Do(pre)
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode != http.StatusOK || !strings.Contains(presp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace") {
		t.Fatalf("preflight: %s %q", presp.Status, presp.Header)
	}
	// a server without k1 does not open it.
	other := httptest.NewServer(CodecHandler(newCodec(t, newKey(t, "k2")), nil, ""))
	defer other.Close()
	if _, err := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{Endpoint: other.URL}).Decode(sealed); err == nil || !strings.Contains(err.Error(), "k1") {
		t.Fatalf("a server without the key: %v", err)
	}
}
