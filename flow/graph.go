package flow

import (
	"sort"
	"strings"
)

// buildGraph resolves requires (omitted = the previous step, [] = a root),
// rejects duplicate ids, unknown requires and cycles, and computes the
// topological order and the upstream sets. It reports whether the graph is
// sound enough for reference checks.
func (d *decoder) buildGraph() bool {
	f := d.flow
	byID := map[string]int{}
	ok := true
	for i, s := range f.Steps {
		if s.ID == "" {
			ok = false
			continue
		}
		if first, dup := byID[s.ID]; dup {
			d.diags.add(posOf(d.srcs[i].fields["id"].value), s.ID, "duplicate step id (first defined at line %d)", f.Steps[first].Pos.Line)
			ok = false
			continue
		}
		byID[s.ID] = i
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, s := range f.Steps {
		src := d.srcs[i]
		if !src.requiresSet {
			if i > 0 && f.Steps[i-1].ID != "" {
				s.Requires = []string{f.Steps[i-1].ID}
				s.RequireIdx = []int{i - 1}
				s.ImplicitOrder = true
			}
			continue
		}
		seen := map[string]bool{}
		reqs := s.Requires[:0:0]
		for k, r := range s.Requires {
			j, found := byID[r]
			switch {
			case !found:
				d.diags.add(src.requiresPos[k], s.ID, "requires unknown step %q%s", r, didYouMean(r, ids))
				ok = false
			case r == s.ID:
				d.diags.add(src.requiresPos[k], s.ID, "a step cannot require itself")
				ok = false
			case seen[r]:
				d.diags.add(src.requiresPos[k], s.ID, "requires %q twice", r)
			default:
				seen[r] = true
				reqs = append(reqs, r)
				s.RequireIdx = append(s.RequireIdx, j)
			}
		}
		s.Requires = reqs
	}
	if !ok {
		return false
	}
	for i, s := range f.Steps {
		for _, j := range s.RequireIdx {
			f.Steps[j].Downstream = append(f.Steps[j].Downstream, i)
		}
	}
	if cycle := findCycle(f.Steps); cycle != nil {
		names := make([]string, len(cycle))
		for k, i := range cycle {
			names[k] = f.Steps[i].ID
		}
		first := f.Steps[cycle[0]]
		d.diags.add(first.Pos, first.ID, "requires form a cycle: %s", strings.Join(names, " → "))
		return false
	}
	f.Order = topoOrder(f.Steps)
	for _, i := range f.Order {
		s := f.Steps[i]
		s.Upstream = map[string]bool{}
		for _, j := range s.RequireIdx {
			up := f.Steps[j]
			s.Upstream[up.ID] = true
			for id := range up.Upstream {
				s.Upstream[id] = true
			}
		}
	}
	return true
}

// findCycle returns the step indexes of one cycle, closed (first == last),
// or nil.
func findCycle(steps []*Step) []int {
	const (
		white = iota
		grey
		black
	)
	color := make([]int, len(steps))
	stack := []int{}
	var found []int
	var visit func(i int) bool
	visit = func(i int) bool {
		color[i] = grey
		stack = append(stack, i)
		for _, j := range steps[i].RequireIdx {
			if color[j] == grey {
				for k := len(stack) - 1; k >= 0; k-- {
					if stack[k] == j {
						// stack[k:] runs j → … → i following requires; print
						// it in execution order (upstream first).
						cyc := append([]int(nil), stack[k:]...)
						for a, b := 0, len(cyc)-1; a < b; a, b = a+1, b-1 {
							cyc[a], cyc[b] = cyc[b], cyc[a]
						}
						found = append(cyc, cyc[0])
						return true
					}
				}
			}
			if color[j] == white && visit(j) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[i] = black
		return false
	}
	for i := range steps {
		if color[i] == white && visit(i) {
			return found
		}
	}
	return nil
}

// topoOrder is Kahn's algorithm, taking ready steps in file order.
func topoOrder(steps []*Step) []int {
	indeg := make([]int, len(steps))
	for i, s := range steps {
		indeg[i] = len(s.RequireIdx)
	}
	order := make([]int, 0, len(steps))
	done := make([]bool, len(steps))
	for len(order) < len(steps) {
		progressed := false
		for i := range steps {
			if done[i] || indeg[i] != 0 {
				continue
			}
			done[i] = true
			order = append(order, i)
			for _, j := range steps[i].Downstream {
				indeg[j]--
			}
			progressed = true
			break
		}
		if !progressed {
			break
		}
	}
	return order
}
