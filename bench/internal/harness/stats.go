package harness

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// quantile is the nearest-rank q-quantile of sorted s (q in [0,1]).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Quantile returns the nearest-rank q-quantile of v (v is left as it is).
func Quantile(v []float64, q float64) float64 { return quantile(slices.Sorted(slices.Values(v)), q) }

// Summary is the median, minimum and maximum of some samples.
type Summary struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the median, minimum and maximum of v.
func Summarize(v []float64) Summary {
	if len(v) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Sorted(slices.Values(v))
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// String is "median [min–max]", or n/a without samples.
func (s Summary) String() string {
	switch {
	case s.N == 0:
		return "n/a"
	case s.N == 1 || s.Min == s.Max:
		return Num(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", Num(s.Median), Num(s.Min), Num(s.Max))
}

// Num formats with about three significant digits.
func Num(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "n/a"
	case math.IsInf(v, 0):
		return "∞"
	case a >= 100:
		return Commas(int(math.Round(v)))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Commas formats n with thousands separators.
func Commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
