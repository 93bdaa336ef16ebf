package temporal

import (
	"strings"
	"testing"
)

// FuzzListQuery: a list query either is refused or holds the values as
// given, each inside one pair of quotes that nothing in it closes.
func FuzzListQuery(f *testing.F) {
	f.Add("resume-screen", "waiting", "acme")
	f.Add("a' OR 'x'='x", "", `b\`)
	f.Fuzz(func(t *testing.T, flow, status, tenant string) {
		o := ListOptions{Flow: flow, Status: status, Tenant: tenant}
		q, err := ListQuery(o)
		if err != nil {
			return
		}
		n := 0
		for _, v := range []string{flow, status, tenant} {
			if v != "" {
				n++
				if !strings.Contains(q, "'"+v+"'") {
					t.Fatalf("query %q lacks %q", q, v)
				}
			}
		}
		if strings.Count(q, "'") != 2*n || strings.ContainsAny(q, `"\`) {
			t.Fatalf("query %q of %+v: its quoting is not its own", q, o)
		}
	})
}
