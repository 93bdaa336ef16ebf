package flow

import (
	"errors"
	"fmt"
	"testing"

	"github.com/reinhq/rein/internal/route"
)

// TestRouteProblems covers both kinds of error route.New may return: a
// *route.Error is reported problem by problem at the rule it names, any
// other error once at the routes: field (and must not be dereferenced as a
// *route.Error).
func TestRouteProblems(t *testing.T) {
	t.Parallel()
	at := Pos{Line: 3, Col: 5}
	rule := Pos{Line: 7, Col: 9}
	cases := []struct {
		name string
		err  error
		want []Diagnostic
	}{
		{
			name: "plain error",
			err:  fmt.Errorf("wrapped: %w", errors.New("router unavailable")),
			want: []Diagnostic{{Line: 3, Col: 5, Step: "pick", Message: "routes: wrapped: router unavailable"}},
		},
		{
			name: "route error",
			err: &route.Error{Problems: []route.Problem{
				{Path: "rules[0].regexp", Message: "bad regexp"},
				{Path: "fallback", Message: "bad fallback"},
			}},
			want: []Diagnostic{
				{Line: 7, Col: 9, Step: "pick", Message: "bad regexp"},
				{Line: 3, Col: 5, Step: "pick", Message: "bad fallback"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := &decoder{}
			rs := &RouteSpec{rulePos: []Pos{rule}}
			d.routeProblems(rs, c.err, at, "pick")
			got := d.diags.items
			if len(got) != len(c.want) {
				t.Fatalf("diagnostics = %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("diagnostic %d = %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}
