package flow_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/flow"
)

// BenchmarkParseResumeScreen parses the reference flow
// testdata/design/resume_screen, schema files included.
func BenchmarkParseResumeScreen(b *testing.B) {
	path := filepath.Join("testdata", "design", "resume_screen", "flow.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	opts := testOptions()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := flow.Parse(data, path, opts); err != nil {
			b.Fatal(err)
		}
	}
}
