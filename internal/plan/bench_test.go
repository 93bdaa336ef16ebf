package plan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/internal/plan"
)

// plan50 is a 50-step plan in ten groups of five steps, 90 $refs in all.
func plan50() string {
	var b strings.Builder
	b.WriteString(`{"goal": "fifty", "steps": [`)
	for g := range 10 {
		if g > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id": "weather%[1]d", "tool": "read_backup_weather", "args": {"city": "Tokyo"}},
			{"id": "convert%[1]d", "tool": "convert_temperature", "args": {"celsius": {"$ref": "weather%[1]d.temperature_c"}}},
			{"id": "hour%[1]d", "tool": "convert_temperature", "depends_on": ["weather%[1]d"], "args": {"celsius": {"$ref": "weather%[1]d.hourly[0].temperature_c"}}},
			{"id": "brief%[1]d", "tool": "write_brief", "args": {"city": {"$ref": "weather%[1]d.city"}, "celsius": {"$ref": "weather%[1]d.temperature_c"},
				"fahrenheit": {"$ref": "convert%[1]d.fahrenheit"}, "condition": {"$ref": "weather%[1]d.condition"}}},
			{"id": "note%[1]d", "tool": "lookup", "args": {"brief": {"$ref": "brief%[1]d"}, "all": [{"$ref": "hour%[1]d.fahrenheit"}, {"$ref": "convert%[1]d"}]}}`, g)
	}
	b.WriteString("]}")
	return b.String()
}

func BenchmarkValidate50(b *testing.B) {
	w := newWorld(b)
	cat := w.catalog(b, nil, 50)
	p := mustParse(b, plan50())
	if err := plan.Validate(p, cat); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := plan.Validate(p, cat); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse50(b *testing.B) {
	data := []byte(plan50())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plan.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecute50(b *testing.B) {
	w := newWorld(b)
	cat := w.catalog(b, nil, 50)
	ex := w.executor(b, plan.ExecutorConfig{Catalog: cat, MaxExecuted: 100})
	p := mustParse(b, plan50())
	b.ReportAllocs()
	for b.Loop() {
		if err := ex.Execute(context.Background(), p, nil); err != nil {
			b.Fatal(err)
		}
	}
}
