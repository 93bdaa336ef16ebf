package flow

import (
	"fmt"
	"sort"
	"strings"

	"github.com/reinhq/rein/flow/ref"
	"github.com/reinhq/rein/value/schema"
)

// This file answers "does this schema declare that field?" so validation can
// catch `{extract_info.resume}` when extract_info's schema says `candidate`.
// It is deliberately forgiving (see schema.At): wherever a schema leaves
// room (no properties listed, additionalProperties allowed, $ref it cannot
// follow), the path is accepted.

// undeclared returns a message when path is not declared by schema doc, or "".
// label names the root for the message (e.g. "extract_info").
func undeclared(doc any, path ref.Path, label string) string {
	at := schema.Root(doc)
	for i, seg := range path {
		var miss *schema.Undeclared
		if seg.IsIndex {
			at, miss = at.Item(seg.Index)
		} else {
			at, miss = at.Field(seg.Key)
		}
		if miss != nil {
			where := label + path[:i].Suffix()
			if seg.IsIndex {
				return fmt.Sprintf("%s is not declared as a list by its schema", where)
			}
			have := append([]string(nil), miss.Fields...)
			if len(miss.Types) > 0 {
				have = append(have, "(not an object)")
				sort.Strings(have)
			}
			if len(have) == 1 && strings.HasPrefix(have[0], "(") {
				return fmt.Sprintf("%s has no field %q: its schema says it is %s", where, seg.Key, strings.Trim(have[0], "()"))
			}
			return fmt.Sprintf("%s has no field %q: its schema declares %s%s", where, seg.Key, listOrNone(have), didYouMean(seg.Key, have))
		}
		if at.Open() {
			return ""
		}
	}
	return ""
}

func listOrNone(have []string) string {
	if len(have) == 0 {
		return "no fields"
	}
	return strings.Join(have, ", ")
}
