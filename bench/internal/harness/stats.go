package harness

import (
	"math"
	"slices"
	"time"
)

func sortedCopy(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

// quantile is the nearest-rank q-quantile of sorted s (q in [0,1]).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Summary is the median, minimum and maximum of some samples.
type Summary struct {
	Median, Min, Max float64
	N                int
}

func summarize(v []float64) Summary {
	if len(v) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := sortedCopy(v)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

func (s Summary) ok() bool { return s.N > 0 && !math.IsNaN(s.Median) }

// durations maps f over items to milliseconds.
func millis[T any](items []T, f func(T) time.Duration) []float64 {
	out := make([]float64, len(items))
	for i, it := range items {
		out[i] = float64(f(it)) / float64(time.Millisecond)
	}
	return out
}
