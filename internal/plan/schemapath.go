package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/value/schema"
)

// This file asks value/schema whether a tool's schema declares a path (for
// $ref into a tool's output) and what JSON type it gives the value there (to
// check a $ref against the input property it feeds), and words the answer
// for a plan's validation messages.

// walkSchema follows path through root. It returns the JSON types the
// schema gives the value at path (zero when it does not say), and a message
// (with label naming the root) when the schema does not declare the path.
func walkSchema(root any, path []ref.Segment, label string) (schema.Type, string) {
	at := schema.Root(root)
	for i, seg := range path {
		var miss *schema.Undeclared
		if seg.IsIndex {
			at, miss = at.Item(seg.Index)
		} else {
			at, miss = at.Field(seg.Key)
		}
		if miss != nil {
			return 0, undeclaredMsg(label+ref.Path(path[:i]).Suffix(), seg, miss)
		}
		if at.Open() {
			return 0, ""
		}
	}
	return at.Types(), ""
}

// undeclaredMsg says that the value at where has no seg.
func undeclaredMsg(where string, seg ref.Segment, miss *schema.Undeclared) string {
	have := append([]string(nil), miss.Fields...)
	for _, t := range miss.Types {
		have = append(have, "("+t.String()+")")
	}
	sort.Strings(have)
	have = uniq(have)
	if len(have) == 1 && strings.HasPrefix(have[0], "(") {
		if seg.IsIndex {
			return fmt.Sprintf("%s cannot be indexed with [%d]: it is declared as %s", where, seg.Index, strings.Trim(have[0], "()"))
		}
		return fmt.Sprintf("%s has no field %q: it is declared as %s", where, seg.Key, strings.Trim(have[0], "()"))
	}
	if seg.IsIndex {
		return fmt.Sprintf("%s is not declared as a list", where)
	}
	return fmt.Sprintf("%s has no field %q: declared fields are %s%s", where, seg.Key, listOrNone(have), didYouMean(seg.Key, have))
}

// compatible reports whether a value of types out may satisfy types in;
// numbers and integers are taken as one type (a number may be integral).
func compatible(out, in schema.Type) bool {
	if out == 0 || in == 0 {
		return true
	}
	const num = schema.Number | schema.Integer
	if out&num != 0 {
		out |= num
	}
	if in&num != 0 {
		in |= num
	}
	return out&in != 0
}

func listOrNone(have []string) string {
	if len(have) == 0 {
		return "none"
	}
	return strings.Join(have, ", ")
}

func uniq(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
