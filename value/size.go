package value

import (
	"math"
	"strconv"
)

// JSONSize is how many bytes v (JSON values, as Normalize makes them, or a
// []string) takes as compact JSON, counted without encoding it; string
// escapes are not counted, so it is a lower bound for text that needs them.
// The walk stops as soon as the count passes limit and returns a number
// above limit, so its cost is bounded by limit, not by v.
func JSONSize(v any, limit int64) int64 {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		return 5
	case string:
		return int64(len(x)) + 2
	case float64:
		return floatSize(x)
	case int:
		return floatSize(float64(x))
	case []string:
		n := int64(2)
		for _, e := range x {
			if n += int64(len(e)) + 3; n > limit {
				return n
			}
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range x {
			if n += JSONSize(e, limit-n) + 1; n > limit {
				return n
			}
		}
		return n
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			if n += int64(len(k)) + 4 + JSONSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	}
	return 8
}

// floatSize is the length of x as encoding/json writes it.
func floatSize(x float64) int64 {
	if a := math.Abs(x); a < 1e6 && a == math.Trunc(a) && !(x == 0 && math.Signbit(x)) {
		n := int64(1)
		if x < 0 {
			n++
		}
		for d := int64(a); d >= 10; d /= 10 {
			n++
		}
		return n
	}
	var buf [32]byte
	return int64(len(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)))
}
