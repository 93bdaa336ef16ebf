package safety

// Declaration is what a model states before a side-effecting call it
// chose (a plan step, an agent call, an execute_plan step) runs: the
// action, the facts it relies on with their sources, the assumptions it
// makes and what a wrong one would contaminate, and the side effects it
// expects. The runtime checks each fact's source against recorded
// provenance; the reviewer judges the claims against the evidence. It is
// candidate data: nothing in it is trusted until checked.
type Declaration struct {
	Action      string       `json:"action"`
	Facts       []Fact       `json:"facts,omitempty"`
	Assumptions []Assumption `json:"assumptions,omitempty"`
	SideEffects []string     `json:"side_effects,omitempty"`
}

// Fact is a claim the call relies on and where it comes from: Source is
// "user" (the user's input), "tool:<name>" or "db" (a recorded tool
// output), and Evidence the text of that source which states it.
type Fact struct {
	Claim    string `json:"claim"`
	Source   string `json:"source"`
	Evidence string `json:"evidence,omitempty"`
}

// Assumption is a claim the call takes for granted without a source. ID
// names it as a premise (`rein runs impact RUN --premise ID`); Affects
// lists what a wrong assumption would contaminate (argument pointers,
// step ids, resources).
type Assumption struct {
	ID      string   `json:"id,omitempty"`
	Claim   string   `json:"claim"`
	Affects []string `json:"affects,omitempty"`
}

// ClaimVerdict is a check of one claim: whether the evidence supports it,
// and the evidence that decided.
type ClaimVerdict struct {
	Claim     string `json:"claim"`
	Supported bool   `json:"supported"`
	Evidence  string `json:"evidence,omitempty"`
}
