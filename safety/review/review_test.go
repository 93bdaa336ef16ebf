package review_test

import (
	"context"
	"strings"
	"testing"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/model"
	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/safety/review"
)

// replies answers each request with the next text and keeps the requests.
type replies struct {
	texts []string
	got   []*model.Request
}

func (r *replies) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	r.got = append(r.got, req)
	t := r.texts[0]
	r.texts = r.texts[1:]
	return &model.Response{Text: t}, nil
}

func request() *safety.ReviewRequest {
	return &safety.ReviewRequest{RunID: "r", StepID: "s",
		Input:   map[string]any{"customer": "Ann"},
		Results: []safety.ToolResult{{Tool: "lookup", Output: map[string]any{"region": "US"}}},
		Declaration: &safety.Declaration{Action: "create the customer",
			Facts:       []safety.Fact{{Claim: "the customer is Ann", Source: "user", Evidence: "customer: Ann"}},
			Assumptions: []safety.Assumption{{ID: "region", Claim: "the region is EU", Affects: []string{"/region"}}}},
		Action: safety.Action{Tool: "create_customer", Args: map[string]any{"name": "Ann", "region": "EU"}},
		Claims: []string{"the customer is Ann", "the region is EU"}}
}

// TestReviewAsksWithTheEvidenceOnly: the one message the model gets holds
// the input, the tool results, the declaration, the action and the
// claims; the verdicts come back per claim.
func TestReviewAsksWithTheEvidenceOnly(t *testing.T) {
	t.Parallel()
	m := &replies{texts: []string{`{"verdicts": [{"claim": "the customer is Ann", "supported": true, "evidence": "customer: Ann"},
		{"claim": "the region is EU", "supported": false, "evidence": "lookup says US"}]}`}}
	vs, err := (&review.Model{Model: m, Name: "rev"}).Review(context.Background(), request())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || !vs[0].Supported || vs[1].Supported || vs[1].Evidence != "lookup says US" {
		t.Errorf("verdicts %+v", vs)
	}
	req := m.got[0]
	if req.Decision != review.Decision || req.Model != "rev" || req.StepID != "s" {
		t.Errorf("request %+v", req)
	}
	var user []string
	for _, msg := range req.Messages {
		if msg.Role == model.User {
			user = append(user, msg.Content)
		}
	}
	if len(user) != 1 {
		t.Fatalf("user messages %q", user)
	}
	for _, want := range []string{`"customer": "Ann"`, `"tool": "lookup"`, `\"region\":\"US\"`, `"action": "create the customer"`,
		`"claim": "the region is EU"`, `"tool": "create_customer"`, `"the customer is Ann"`} {
		if !strings.Contains(user[0], want) {
			t.Errorf("the prompt lacks %s:\n%s", want, user[0])
		}
	}
}

// TestReviewRejectsMissingVerdicts: an answer that leaves a claim out is
// corrected once, then a format error.
func TestReviewRejectsMissingVerdicts(t *testing.T) {
	t.Parallel()
	bad := `{"verdicts": [{"claim": "the customer is Ann", "supported": true}]}`
	m := &replies{texts: []string{bad, bad}}
	_, err := (&review.Model{Model: m, Name: "rev"}).Review(context.Background(), request())
	if fault.ClassOf(err) != fault.Format || !strings.Contains(err.Error(), `claim "the region is EU" has no verdict`) || len(m.got) != 2 {
		t.Errorf("error %v after %d requests", err, len(m.got))
	}
}
