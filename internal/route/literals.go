package route

import (
	"unicode/utf8"
)

// maxLiteralBytes bounds the literals one literalSet holds; past it rules
// fall back to one substring search each.
const maxLiteralBytes = 1 << 16

// literalSet finds, in one pass over a request's text, which rules'
// required literals (see prefilter.go) it contains: an Aho-Corasick
// automaton over the exact literals and one over the case-folded ones.
type literalSet struct {
	exact, fold *automaton
	n           int // rules, the size of the result set
}

// newLiteralSet indexes the literals of rules; nil when there are none or
// they are too large to index.
func newLiteralSet(rules []compiledRule) *literalSet {
	var exact, fold []string
	var exactIDs, foldIDs []int32
	total := 0
	for i, c := range rules {
		if c.lit == "" {
			continue
		}
		total += len(c.lit)
		if c.fold {
			fold, foldIDs = append(fold, c.lit), append(foldIDs, int32(i))
		} else {
			exact, exactIDs = append(exact, c.lit), append(exactIDs, int32(i))
		}
	}
	if total == 0 || total > maxLiteralBytes {
		return nil
	}
	return &literalSet{exact: newAutomaton(exact, exactIDs, false), fold: newAutomaton(fold, foldIDs, true), n: len(rules)}
}

// scan marks in set (len(set) ≥ (n+63)/64, zeroed) the rules whose literal
// text contains.
func (ls *literalSet) scan(text string, set []uint64) {
	if ls.exact != nil {
		ls.exact.scan(text, set)
	}
	if ls.fold != nil {
		hay := text
		for i := 0; i < len(text); i++ {
			if text[i] >= utf8.RuneSelf {
				hay = foldString(text) // ASCII is folded by the class table
				break
			}
		}
		ls.fold.scan(hay, set)
	}
}

// automaton is a dense Aho-Corasick automaton over byte classes.
type automaton struct {
	class  [256]uint8
	nclass int
	// next is delta premultiplied for scanning: next[s*nclass+class] is
	// the next state times nclass, with hasOut set when literals end there.
	next []uint32
	out  [][]int32 // state → rule indexes whose literal ends there
}

const hasOut = 1 << 31

// newAutomaton builds the automaton of lits (ids[i] is the rule of
// lits[i]); with fold, the lits are in folded form and lowercase ASCII in
// the text is read as uppercase. Nil for no lits.
func newAutomaton(lits []string, ids []int32, fold bool) *automaton {
	if len(lits) == 0 {
		return nil
	}
	a := &automaton{nclass: 1} // class 0: bytes in no literal
	for _, lit := range lits {
		for i := 0; i < len(lit); i++ {
			if b := lit[i]; a.class[b] == 0 {
				if a.nclass == 256 {
					return nil // every byte value in use: nothing to gain
				}
				a.class[b] = uint8(a.nclass)
				a.nclass++
			}
		}
	}
	if fold {
		for b := 'a'; b <= 'z'; b++ {
			a.class[b] = a.class[b-'a'+'A']
		}
	}
	// The trie: goto edges, -1 for none.
	delta := make([]int32, a.nclass)
	for i := range delta {
		delta[i] = -1
	}
	a.out = [][]int32{nil}
	for k, lit := range lits {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			e := int(s)*a.nclass + int(a.class[lit[i]])
			if delta[e] < 0 {
				delta[e] = int32(len(a.out))
				a.out = append(a.out, nil)
				for range a.nclass {
					delta = append(delta, -1)
				}
			}
			s = delta[e]
		}
		a.out[s] = append(a.out[s], ids[k])
	}
	// Breadth first: fail links, complete transitions, merged outputs.
	fail := make([]int32, len(a.out))
	queue := make([]int32, 0, len(a.out))
	for c := range a.nclass {
		if t := delta[c]; t > 0 {
			queue = append(queue, t)
		} else {
			delta[c] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.out[s] = append(a.out[s], a.out[fail[s]]...)
		for c := range a.nclass {
			e := int(s)*a.nclass + c
			f := delta[int(fail[s])*a.nclass+c]
			if t := delta[e]; t > 0 {
				fail[t] = f
				queue = append(queue, t)
			} else {
				delta[e] = f
			}
		}
	}
	a.next = make([]uint32, len(delta))
	for e, t := range delta {
		a.next[e] = uint32(int(t) * a.nclass)
		if len(a.out[t]) > 0 {
			a.next[e] |= hasOut
		}
	}
	return a
}

func (a *automaton) scan(text string, set []uint64) {
	next, class := a.next, &a.class
	s := uint32(0)
	for i := 0; i < len(text); i++ {
		t := next[s+uint32(class[text[i]])]
		s = t &^ hasOut
		if t&hasOut != 0 {
			for _, id := range a.out[s/uint32(a.nclass)] {
				set[id>>6] |= 1 << (id & 63)
			}
		}
	}
}
