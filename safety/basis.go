package safety

// Basis is what the gate saw of an invocation besides the tool and its
// args: journaled with the decision (the data of a gate_decision event) so
// that `rein runs why` can say where each argument came from, which tool
// result verified what, and how the declaration was checked.
type Basis struct {
	Provenance  Provenance     `json:"provenance,omitempty"`
	Verified    []Verification `json:"verified,omitempty"`
	Chosen      bool           `json:"chosen,omitempty"`
	Declaration *Declaration   `json:"declaration,omitempty"`
	Claims      []ClaimVerdict `json:"claims,omitempty"`
}

// BasisOf returns the basis of inv; it shares inv's values.
func BasisOf(inv *Invocation) Basis {
	return Basis{Provenance: inv.Provenance, Verified: inv.Verified, Chosen: inv.Chosen, Declaration: inv.Declaration, Claims: inv.Claims}
}
