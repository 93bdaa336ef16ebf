package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/reinhq/rein/flow"
)

// The SVG of a flow is well-formed XML with one group per step, coloured
// by the status it is given, every text escaped, and the failure paths.
func TestSVG(t *testing.T) {
	f, err := flow.Parse([]byte(`
name: refund
steps:
  - id: fetch
    type: tool
    tool: fetch_order
  - id: review
    type: approval
    message: "<script>alert(1)</script>"
    on_error: escalate
  - id: pay
    type: tool
    tool: pay
    retries: 2
`), "flow.yaml", testOptions)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := SVG(&b, f, map[string]string{"fetch": "succeeded", "review": "waiting"}, map[string]string{"pay": "2/3 items"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, out)
		}
	}
	for _, want := range []string{
		`class="node k-step st-succeeded" id="step-fetch"`,
		`class="node k-step st-waiting" id="step-review"`,
		`class="node k-step" id="step-pay"`,
		`>2/3 items</text>`,
		`class="node k-person"`,
		`class="edge e-retry"`,
		`class="edge e-failure"`,
		`class="node k-failed"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the SVG lacks %s\n%s", want, out)
		}
	}
	if strings.Contains(out, "<script>") || strings.Contains(out, "style=") {
		t.Errorf("the SVG holds raw markup or an inline style\n%s", out)
	}
	if err := SVG(&b, nil, nil, nil); err == nil {
		t.Error("a nil flow drew")
	}
}
