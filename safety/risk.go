package safety

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/tool"
)

// Risk tiers, lowest first. The tier selects the controls a run's tool
// calls get (Controls):
//
//	1  none: only what the policy's rules say (a run of tier 1 has no side effects)
//	2  the light gate: the policy's rules
//	3  the gate + the reviewer on every side-effect call; an agent that
//	   offers execute_plan makes its side-effect calls through a plan
//	4  the gate + the reviewer + a person's approval of every side-effect
//	   call + the post-check after it
const (
	TierNone     = 1
	TierLight    = 2
	TierReviewed = 3
	TierApproved = 4
)

// TierPlan is the tier from which an agent that offers execute_plan must
// plan its side-effect calls: a direct call of a side-effect tool is
// refused with an observation that tells the model to call execute_plan.
const TierPlan = TierReviewed

// Default thresholds of the blast radius (RiskConfig).
const (
	DefaultMaxFanOut    = 10
	DefaultMaxResources = 10
)

// RiskConfig is rein.yaml / flow risk:, what Assess reads besides the
// signals. The zero value is the defaults.
type RiskConfig struct {
	// MinTier is the floor: no run is assessed below it. Zero: 1.
	MinTier int
	// ToolCost and TagCost are the cost of error, as the tier a call of
	// the tool (of a tool carrying the tag) puts the run at, at least.
	ToolCost map[string]int
	TagCost  map[string]int
	// MaxFanOut: a step with side effects fanning out to more calls than
	// this (for_each items) is tier 3. Zero: DefaultMaxFanOut.
	MaxFanOut int
	// MaxResources: side-effect calls naming more resources than this in
	// all (tool.Spec.Resources, times the fan-out) are tier 3. Zero:
	// DefaultMaxResources.
	MaxResources int
	// PostCheck names the tool called after every side-effect call of a
	// tier-4 run (Controls); "" for none.
	PostCheck string
}

// Signals are what a risk tier is assessed from: the tools a run (or a
// step, or one call) will make, and what is known of its premises.
type Signals struct {
	// Tools are the tools that will be called.
	Tools []tool.Spec
	// FanOut is the largest number of calls one step makes (its for_each
	// items); 0 or 1 for none.
	FanOut int
	// Args counts the arguments that drive side effects; Inferred those of
	// them a model wrote (at a call: and no tool result verified).
	Args, Inferred int
	// Ahead says the signals are assessed before the calls are made
	// (intake, a plan, a step's start): a model's argument may yet be
	// verified by a tool result, so the share of inferred arguments
	// raises the tier to 2 at most. At a call (Ahead false) half or more
	// unverified inferred arguments make it 3.
	Ahead bool
	// Unverified lists the declared assumptions that nothing (no tool
	// result, no person) confirmed.
	Unverified []string
	// Config holds the cost of error, the thresholds and the floor; nil:
	// the defaults.
	Config *RiskConfig
}

// SideEffect reports whether e changes the world (write, external,
// destructive).
func SideEffect(e tool.Effect) bool {
	return e == tool.EffectWrite || e == tool.EffectExternal || e == tool.EffectDestructive
}

// Assess returns the risk tier of s, 1 to 4: the most conservative of
//
//	signal              tier 2                        tier 3                                 tier 4
//	effect strength     write, external               destructive                            —
//	reversibility       compensatable side effect     irreversible side effect               irreversible and destructive
//	blast radius        tag user-facing               tag money or compliance; fan-out       —
//	                                                  above max_fan_out (10); more than
//	                                                  max_resources (10) resources written
//	premise uncertainty an inferred argument drives   at a call, half or more of its         an unverified assumption behind a
//	                    a side effect                 arguments inferred and unverified;     destructive or irreversible effect
//	                                                  an unverified assumption
//	cost of error       risk: costs (per tool, per tag): the tier configured
//	floor               risk: min_tier
//
// Blast radius applies to tools with side effects only. reasons says what
// raised the tier above 1, one line per signal that did, the highest
// first, each ending in the tier it gives; none for a tier-1 run.
func Assess(s Signals) (tier int, reasons []string) {
	a := assessor{tier: TierNone, explain: true}
	a.assess(&s)
	return a.tier, a.sorted()
}

// TierOf is Assess without the reasons: it allocates nothing, for the
// per-call check of a tier already assessed.
func TierOf(s *Signals) int {
	a := assessor{tier: TierNone}
	a.assess(s)
	return a.tier
}

func (a *assessor) assess(s *Signals) {
	cfg := s.Config
	if cfg == nil {
		cfg = &RiskConfig{}
	}
	side, resources := 0, 0
	fanOut := max(s.FanOut, 1)
	var strongest tool.Effect
	for i := range s.Tools {
		t := &s.Tools[i]
		a.cost(cfg, t)
		if !SideEffect(t.Effect) {
			continue
		}
		side++
		resources += len(t.Resources) * fanOut
		if t.Effect == tool.EffectDestructive {
			a.raise(TierReviewed, func() string { return fmt.Sprintf("effect: tool %s is destructive", t.Name) })
			strongest = tool.EffectDestructive
		} else {
			a.raise(TierLight, func() string { return fmt.Sprintf("effect: tool %s has effect %s", t.Name, t.Effect) })
			if strongest == "" {
				strongest = t.Effect
			}
		}
		switch t.Reversibility {
		case tool.Compensatable:
			a.raise(TierLight, func() string { return fmt.Sprintf("reversibility: tool %s can only be compensated", t.Name) })
		case tool.Irreversible:
			if t.Effect == tool.EffectDestructive {
				a.raise(TierApproved, func() string { return fmt.Sprintf("reversibility: tool %s is destructive and irreversible", t.Name) })
			} else {
				a.raise(TierReviewed, func() string { return fmt.Sprintf("reversibility: tool %s is irreversible", t.Name) })
			}
		}
		for _, tag := range t.Tags {
			switch tag {
			case "money", "compliance":
				a.raise(TierReviewed, func() string { return fmt.Sprintf("blast radius: tool %s is tagged %s", t.Name, tag) })
			case "user-facing":
				a.raise(TierLight, func() string { return fmt.Sprintf("blast radius: tool %s is tagged user-facing", t.Name) })
			}
		}
	}
	if side > 0 {
		if limit := orDefault(cfg.MaxFanOut, DefaultMaxFanOut); s.FanOut > limit {
			a.raise(TierReviewed, func() string {
				return fmt.Sprintf("blast radius: a step fans out to %d calls with side effects (max_fan_out %d)", s.FanOut, limit)
			})
		}
		if limit := orDefault(cfg.MaxResources, DefaultMaxResources); resources > limit {
			a.raise(TierReviewed, func() string {
				return fmt.Sprintf("blast radius: %d resources written (max_resources %d)", resources, limit)
			})
		}
		if s.Inferred > 0 && s.Args > 0 {
			if 2*s.Inferred >= s.Args && !s.Ahead {
				a.raise(TierReviewed, func() string {
					return fmt.Sprintf("premise uncertainty: %d of %d arguments driving side effects were written by a model and no tool result verified them", s.Inferred, s.Args)
				})
			} else {
				a.raise(TierLight, func() string {
					return fmt.Sprintf("premise uncertainty: %d of %d arguments driving side effects were written by a model", s.Inferred, s.Args)
				})
			}
		}
		if n := len(s.Unverified); n > 0 {
			if strongest == tool.EffectDestructive || a.irreversible(s.Tools) {
				a.raise(TierApproved, func() string {
					return fmt.Sprintf("premise uncertainty: unverified assumption %s behind a destructive or irreversible effect", quoteList(s.Unverified))
				})
			} else {
				a.raise(TierReviewed, func() string {
					return fmt.Sprintf("premise uncertainty: unverified assumption %s", quoteList(s.Unverified))
				})
			}
		}
	}
	if cfg.MinTier > TierNone {
		a.raise(min(cfg.MinTier, TierApproved), func() string { return fmt.Sprintf("floor: risk min_tier is %d", cfg.MinTier) })
	}
}

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// assessor collects the tier and the reasons of the signals that raised it.
type assessor struct {
	tier    int
	explain bool // collect the reasons
	reasons []reason
}

type reason struct {
	tier int
	text string
}

// raise raises the tier; why is asked only when the reasons are kept.
func (a *assessor) raise(tier int, why func() string) {
	a.tier = max(a.tier, tier)
	if !a.explain {
		return
	}
	a.reasons = append(a.reasons, reason{tier, why() + fmt.Sprintf(" (tier %d)", tier)})
}

// cost applies the configured cost of error of t, by name and by tag.
func (a *assessor) cost(cfg *RiskConfig, t *tool.Spec) {
	if c := cfg.ToolCost[t.Name]; c > TierNone {
		a.raise(min(c, TierApproved), func() string { return fmt.Sprintf("cost of error: risk costs tool %s at tier %d", t.Name, c) })
	}
	for _, tag := range t.Tags {
		if c := cfg.TagCost[tag]; c > TierNone {
			a.raise(min(c, TierApproved), func() string {
				return fmt.Sprintf("cost of error: risk costs tag %s (tool %s) at tier %d", tag, t.Name, c)
			})
		}
	}
}

func (a *assessor) irreversible(tools []tool.Spec) bool {
	return slices.ContainsFunc(tools, func(t tool.Spec) bool { return SideEffect(t.Effect) && t.Reversibility == tool.Irreversible })
}

// sorted returns the reasons, highest tier first, each once.
func (a *assessor) sorted() []string {
	slices.SortStableFunc(a.reasons, func(x, y reason) int { return y.tier - x.tier })
	out := make([]string, 0, len(a.reasons))
	for _, r := range a.reasons {
		if !slices.Contains(out, r.text) {
			out = append(out, r.text)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
