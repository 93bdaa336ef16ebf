package value

import (
	"math"
	"strconv"
	"testing"
)

// TestFloatSizeMatchesFormatFloat: the bound counts a number as
// strconv.FormatFloat writes it, without formatting it.
func TestFloatSizeMatchesFormatFloat(t *testing.T) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1, 9, 10, 41, -99, 999999, -999999, 1e6, 1234567, 0.5, -2.25, 1e-7, 1e21, 123456.5, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()} {
		if got, want := floatSize(x), int64(len(strconv.FormatFloat(x, 'g', -1, 64))); got != want {
			t.Errorf("floatSize(%v) = %d, want %d", x, got, want)
		}
	}
}
