package safety_test

import (
	"fmt"

	"github.com/reinhq/rein/safety"
	"github.com/reinhq/rein/tool"
)

// Trace a model's arguments to what the run recorded, and check the
// declaration it wrote before a side-effecting call.
func ExampleCheckDeclaration() {
	var ev safety.Evidence
	ev.AddUser("input", "Please onboard Acme Corp.")
	lookup := tool.Spec{Name: "lookup_region", Effect: tool.EffectRead}
	ev.AddTool("step lookup", &lookup, map[string]any{"customer": "Acme Corp", "region": "eu-west"})

	args := map[string]any{"name": "Acme Corp", "region": "eu-west", "tier": "gold"}
	prov := ev.Trace(args)
	for _, ptr := range prov.Pointers() {
		fmt.Println(ptr, prov[ptr])
	}
	d := &safety.Declaration{Action: "create the customer", Facts: []safety.Fact{
		{Claim: "the region", Source: "tool:lookup_region", Evidence: "eu-west"},
		{Claim: "the tier", Source: "user", Evidence: "gold"},
	}}
	claims := safety.CheckDeclaration(d, &ev)
	for _, c := range claims {
		fmt.Println(c.Supported, c.Evidence)
	}
	fmt.Println(safety.StateOf(true, d, claims))
	// Output:
	// /name [db user]
	// /region [db]
	// /tier [inferred]
	// true "eu-west" found in the output of tool lookup_region (step lookup)
	// false "gold" is not in the user's input
	// unverified
}
