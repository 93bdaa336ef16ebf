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

// DeclarationState is where a model-chosen call stands with its
// declaration, for the rule condition `declaration:`.
type DeclarationState string

// Declaration states. A call that is not chosen by a model has none ("").
const (
	// DeclarationMissing: the call carries no declaration.
	DeclarationMissing DeclarationState = "missing"
	// DeclarationUnverified: it states no fact, or a fact whose source
	// the runtime could not confirm.
	DeclarationUnverified DeclarationState = "unverified"
	// DeclarationVerified: every fact it states was found in its source.
	DeclarationVerified DeclarationState = "verified"
)

// Valid reports whether s is one of the states.
func (s DeclarationState) Valid() bool {
	return s == DeclarationMissing || s == DeclarationUnverified || s == DeclarationVerified
}

// StateOf returns the declaration state of a call: "" when no model chose
// it, missing without a declaration, verified when it states facts and
// claims says each is supported, else unverified.
func StateOf(chosen bool, d *Declaration, claims []ClaimVerdict) DeclarationState {
	switch {
	case !chosen:
		return ""
	case d == nil:
		return DeclarationMissing
	case len(d.Facts) == 0 || len(claims) < len(d.Facts):
		return DeclarationUnverified
	}
	for _, c := range claims {
		if !c.Supported {
			return DeclarationUnverified
		}
	}
	return DeclarationVerified
}
