// Package ui holds the pages of rein serve's web UI: html/template
// templates, a stylesheet and the vendored htmx with its SSE extension,
// all embedded (go:embed), so the binary serves the UI with nothing
// fetched at run time. Package server/http renders them (Render) with
// the data of each page and serves the assets (Assets) under /assets/.
//
// The pages carry no inline script or style, so they run under a
// Content-Security-Policy of default-src 'self'.
package ui

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// BigPayload is the size (bytes of indented JSON) from which a payload is
// shown collapsed (<details>).
const BigPayload = 600

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"pretty": Pretty,
	"big":    func(s string) bool { return len(s) > BigPayload || strings.Count(s, "\n") > 12 },
	"dur":    Duration,
	"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"short":  func(id string) string { return id[:min(len(id), 8)] },
	"join":   strings.Join,
}).ParseFS(templateFS, "templates/*.html"))

// Render writes the page name (a template of templates/) with data to w,
// whole or not at all: a template that fails writes nothing.
func Render(w io.Writer, name string, data any) error {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return fmt.Errorf("ui: render %s: %w", name, err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Assets serves the embedded stylesheet and scripts (strip /assets/ first).
func Assets() http.Handler {
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embedded folder exists
	}
	return http.FileServerFS(sub)
}

// Pretty is raw JSON indented, or the raw text when it is not JSON.
func Pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// Duration is the time from a to b, rounded for a person ("" when
// either is unset).
func Duration(a, b time.Time) string {
	if a.IsZero() || b.IsZero() {
		return ""
	}
	d := b.Sub(a)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
