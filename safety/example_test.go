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
	ev.AddUser("input", map[string]any{"customer": "Acme Corp"})
	ev.AddUserText("task", "Onboard the customer, the gold tier is not for them.")
	lookup := tool.Spec{Name: "lookup_region", Effect: tool.EffectRead, Verifies: []string{"/region"}}
	ev.AddTool("step lookup", &lookup, map[string]any{"customer": "Acme Corp", "region": "eu-west"})

	args := map[string]any{"name": "Acme Corp", "region": "eu-west", "tier": "gold"}
	prov := ev.Trace(args)
	for _, ptr := range prov.Pointers() {
		fmt.Println(ptr, prov[ptr])
	}
	for _, v := range ev.Verify(args, prov) {
		fmt.Println(v.Pointer, "verified by", v.Tool, "at", v.Field)
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
	// /name [user]
	// /region [inferred]
	// /tier [user-mentioned]
	// /region verified by lookup_region at /region
	// true "eu-west" found in the output of tool lookup_region (step lookup) at /region
	// true "gold" found in the user's input (task)
	// verified
}
