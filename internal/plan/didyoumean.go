package plan

import (
	"fmt"
	"strings"
)

// didYouMean suggests the closest of have to s, when one is close.
func didYouMean(s string, have []string) string {
	best, bestD := "", 3
	for _, h := range have {
		if d := distance(s, h); d < bestD && d < len(s) {
			best, bestD = h, d
		}
	}
	if best == "" && len(s) >= 3 {
		for _, h := range have {
			if strings.HasPrefix(h, s) || strings.HasPrefix(s, h) && len(h) >= 3 {
				best = h
				break
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b, in bytes.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
