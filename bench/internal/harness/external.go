package harness

import (
	"context"
	"strconv"
)

// The entry points below serve measurement programs other than listenbench
// (bench/cmd/mcpgobench), which run the fan-out scenario on servers of
// their own choosing and write their own report.

// Server is a built server under test.
type Server struct{ b *serverBin }

// Build builds kind's package from repo into dir (or takes prebuilt) and
// gives it the flags Run gives its servers: -max-streams above maxN and
// -pprof, when it offers them.
func Build(ctx context.Context, repo, dir string, kind Kind, prebuilt string, maxN int) (*Server, error) {
	b, err := build(ctx, repo, dir, kind, prebuilt, nil)
	if err != nil {
		return nil, err
	}
	if b.has("max-streams") {
		b.args = append(b.args, "-max-streams="+strconv.Itoa(maxN+16))
	}
	if b.has("pprof") {
		b.args = append(b.args, "-pprof")
	}
	return &Server{b: b}, nil
}

// Kind returns the server's kind.
func (s *Server) Kind() Kind { return s.b.kind }

// Args returns the flags the server is started with, besides -addr,
// -quiet and -lifetime.
func (s *Server) Args() []string { return append([]string(nil), s.b.args...) }

// Fanout runs the fan-out scenario once on a fresh process of s, with n
// streams and cfg's triggers (see FanoutRun); tmp receives its stderr
// file. round is recorded in the run.
func (s *Server) Fanout(ctx context.Context, cfg *Config, tmp string, n, round int) (*FanoutRun, error) {
	return fanout(ctx, cfg, s.b, tmp, n, round, false)
}

// RaiseNoFile raises RLIMIT_NOFILE, which the servers inherit, to at least
// need if it can, and returns the soft limit in force (see Run).
func RaiseNoFile(need uint64) (uint64, error) { return raiseNoFile(need) }

// LoadAverage returns the first three fields of /proc/loadavg.
func LoadAverage() string { return loadavg() }

// Summarize returns the median, minimum and maximum of v.
func Summarize(v []float64) Summary { return summarize(v) }

// Quantile returns the nearest-rank q-quantile of v, which it sorts.
func Quantile(v []float64, q float64) float64 { return quantile(sortedCopy(v), q) }
