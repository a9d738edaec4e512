package otel_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	listenotel "github.com/mcplisten/listen/otel"
	"github.com/mcplisten/listen/streamhttp"
)

// prometheusRequired is the environment variable that makes the tests
// that need Prometheus's programs (promtool here, prometheus in
// examples/server) fail instead of skipping when they are missing.
const prometheusRequired = "MCPLISTEN_PROMETHEUS_REQUIRED"

// promNames returns the names the OpenTelemetry Prometheus exporter gives
// every instrument of the package: counters end in _total, the fan-out
// histogram in _seconds (with its _bucket, _sum and _count series).
func promNames(t *testing.T) map[string]bool {
	t.Helper()
	m, reader := newMetrics(t)
	var hopts streamhttp.Options
	m.InstrumentHTTP(&hopts)
	var lopts listen.Options
	m.Instrument(&lopts)
	h, err := hub.New(withMetrics(m, hub.Options{}))
	require.NoError(t, err)
	h.ToolsListChanged() // a first fan-out, so that the histogram exists
	m.InstrumentBridge("nats", &cluster.Options{})

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	names := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, im := range sm.Metrics {
			base := strings.ReplaceAll(im.Name, ".", "_")
			switch d := im.Data.(type) {
			case metricdata.Sum[int64]:
				if d.IsMonotonic {
					base += "_total"
				}
				names[base] = true
			case metricdata.Histogram[float64]:
				require.Equal(t, "s", im.Unit)
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[base+"_seconds"+s] = true
				}
			default:
				t.Fatalf("%s: unexpected data %T", im.Name, im.Data)
			}
		}
	}
	return names
}

var (
	alertRE  = regexp.MustCompile(`(?m)^\s*- alert: (\w+)$`)
	metricRE = regexp.MustCompile(`\bmcp_listen_[a-z_]+`)
)

// The shipped dashboard and alert rules (monitoring/) hold together: every
// alert has a runbook entry in docs/operations.md that its runbook_url
// points to, and promtool cases where it fires and where it does not; every
// metric the rules and the dashboard query is one this package exports;
// every dashboard panel has a query on the dashboard's data source. With
// promtool installed (Debian's prometheus package), `promtool check rules`
// and `promtool test rules` pass.
func TestMonitoringFiles(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	rules := read("monitoring/alerts.yml")
	cases := read("monitoring/alerts_test.yml")
	runbook := read("../docs/operations.md")
	dashboard := read("monitoring/dashboard.json")

	var alerts []string
	for _, m := range alertRE.FindAllStringSubmatch(rules, -1) {
		alerts = append(alerts, m[1])
	}
	require.Len(t, alerts, 11)
	blocks := alertRE.Split(rules, -1)[1:]
	for i, a := range alerts {
		anchor := strings.ToLower(a)
		assert.Contains(t, runbook, "\n### "+a+"\n", "a runbook entry for %s", a)
		assert.Contains(t, blocks[i], "runbook_url: https://github.com/mcplisten/listen/blob/main/docs/operations.md#"+anchor+"\n", a)
		assert.Contains(t, cases, "alertname: "+a+"\n        exp_alerts: []\n", "a case where %s does not fire", a)
		assert.Contains(t, cases, "alertname: "+a+"\n        exp_alerts:\n          - exp_labels:", "a case where %s fires", a)
	}

	known := promNames(t)
	for _, k := range []attribute.Key{listenotel.AttrTransport, listenotel.AttrNotificationKind,
		listenotel.AttrCloseReason, listenotel.AttrRefusalCause, listenotel.AttrBroker,
		listenotel.AttrBridgeOutcome, listenotel.AttrDropReason, listenotel.AttrResyncReason} {
		known[strings.ReplaceAll(string(k), ".", "_")] = true // a label
	}
	for file, text := range map[string]string{"alerts.yml": rules, "alerts_test.yml": cases, "dashboard.json": dashboard} {
		for _, name := range metricRE.FindAllString(text, -1) {
			assert.True(t, known[name], "%s names %s, which the package does not export", file, name)
		}
	}

	var d struct {
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(dashboard), &d))
	ids := map[int]bool{}
	panels := 0
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		panels++
		assert.Equal(t, "${datasource}", p.Datasource.UID, p.Title)
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			assert.Contains(t, tg.Expr, `job=~"$job", instance=~"$instance"`, p.Title)
		}
	}
	assert.Equal(t, 16, panels)

	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv(prometheusRequired) == "1" {
			t.Fatalf("promtool not found and %s=1", prometheusRequired)
		}
		t.Skip("promtool not found: install Debian's prometheus package to run promtool check rules and test rules")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command("promtool", args...)
		cmd.Dir = "monitoring"
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	}
}
