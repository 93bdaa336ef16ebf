package temporal

import (
	"net/http"

	"go.temporal.io/sdk/converter"

	"github.com/reinhq/rein/redact/seal"
)

// maxCodecRequest bounds a codec server request's body: a page of the
// Temporal UI's payloads, each under Temporal's own payload limit.
const maxCodecRequest = 64 << 20

// CodecHandler is a Temporal codec server (the HTTP protocol the Temporal
// UI and CLI speak: POST /encode and POST /decode of {"payloads": […]},
// converter.NewPayloadCodecHTTPHandler) over Codecs(keys, blobs): it opens
// sealed payloads and reads back those stored by reference, so the UI
// shows a sealed run readable. origin, when not empty, is the one web
// origin (the UI's, like http://localhost:8233) allowed to call it from a
// browser (CORS, with credentials, so a proxy in front can authenticate
// the UI's users); a preflight OPTIONS is answered there. Whoever reaches
// it reads every run the keys open: serve it where only those allowed to
// read runs can (docs/temporal.md "Secrets").
func CodecHandler(keys *seal.Codec, blobs *BlobCodec, origin string) http.Handler {
	next := converter.NewPayloadCodecHTTPHandler(Codecs(keys, blobs)...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin != "" {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Headers", "Authorization,Content-Type,X-Namespace")
			h.Set("Access-Control-Allow-Methods", "POST,OPTIONS")
			h.Set("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCodecRequest)
		next.ServeHTTP(w, r)
	})
}
