package journal

import "encoding/json"

// TierChange is the record a risk_tier event carries (Event.Data): the
// run's risk tier changed from From (0 at intake) to Tier, at Stage
// (intake, plan, step, call), because of Reasons. Event.StepID and
// Event.Tool name the step and tool whose assessment raised it.
type TierChange struct {
	Tier    int      `json:"tier"`
	From    int      `json:"from,omitempty"`
	Stage   string   `json:"stage"`
	Reasons []string `json:"reasons,omitempty"`
}

// Review is the record a review event carries (Event.Data): the
// reviewer's verdict on each claim behind a pending call, or its error,
// and the decision they made. Event.StepID, PlanStep and Tool name the
// call; Event.Decision repeats Verdict.
type Review struct {
	Claims []ClaimVerdict `json:"claims"`
	Error  string         `json:"error,omitempty"`
	// Verdict and Reason are the decision the review made (allow or
	// require_approval).
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// ClaimVerdict is the reviewer's verdict on one claim.
type ClaimVerdict struct {
	Claim     string `json:"claim"`
	Supported bool   `json:"supported"`
	Evidence  string `json:"evidence,omitempty"`
}

// Encode returns c as the JSON text of Event.Data.
func (c *TierChange) Encode() string { return mustEncodeData(c) }

// Encode returns r as the JSON text of Event.Data.
func (r *Review) Encode() string { return mustEncodeData(r) }

// mustEncodeData is encodeData of a record of plain strings, ints and
// bools, which always encode.
func mustEncodeData(v any) string {
	s, err := encodeData(v)
	if err != nil {
		panic(err)
	}
	return s
}

// DecodeTierChange reads a risk_tier event's Data.
func DecodeTierChange(data string) (*TierChange, error) {
	c := new(TierChange)
	return c, json.Unmarshal([]byte(data), c)
}

// DecodeReview reads a review event's Data.
func DecodeReview(data string) (*Review, error) {
	r := new(Review)
	return r, json.Unmarshal([]byte(data), r)
}
