//go:build !slim

package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/opsmetrics"
)

// metricNames scrapes /metrics and returns the names of the series there.
func (s *system) metricNames() map[string]bool {
	s.t.Helper()
	r := s.mustDo("GET", "/metrics", "", nil)
	require.Equal(s.t, http.StatusOK, r.status)
	names := map[string]bool{}
	for _, line := range strings.Split(string(r.body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name = line[:i]
		}
		names[name] = true
	}
	return names
}

// dashboardSeries lists the series the committed Grafana dashboard
// queries.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/dashboards/seckill.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.Panels)
	seen := map[string]bool{}
	series := regexp.MustCompile(`\b(?:seckill|temporal|process|go)_[a-z_]+`)
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, name := range series.FindAllString(target.Expr, -1) {
				seen[name] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// After a sale with a paid and a cancelled order, /metrics has every series
// the Grafana dashboard draws: seckill's own, the saga's (counted through
// the workflow's metrics handler) and the Temporal SDK's.
func TestMetrics_EverySeriesTheDashboardDraws(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(3, time.Minute)
	paid := s.claim(sale, "payer").json(t)["order_id"].(string)
	cancelled := s.claim(sale, "canceller").json(t)["order_id"].(string)
	s.claim(sale, "canceller") // ALREADY_CLAIMED
	s.waitOrder(paid, "payer", seckill.StatusAwaitingPayment, 30*time.Second)
	s.waitOrder(cancelled, "canceller", seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_metrics_paid", seckill.PaymentSucceeded, paid, 990).status)
	r := s.mustDo("POST", "/api/v1/orders/"+cancelled+"/cancel", s.token("canceller", false), nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	s.waitOrder(paid, "payer", seckill.StatusPaid, 30*time.Second)
	s.waitOrder(cancelled, "canceller", seckill.StatusClosed, 30*time.Second)

	// A payment whose saga is not running (terminated here; a backlog of
	// sagas in a burst) is recorded and counted RECEIVED, never under an
	// empty outcome.
	lost := s.claim(sale, "lost").json(t)["order_id"].(string)
	s.waitOrder(lost, "lost", seckill.StatusAwaitingPayment, 30*time.Second)
	require.NoError(t, s.temporal.TerminateWorkflow(context.Background(), seckill.OrderWorkflowID(mustInt(t, lost)), "", "test: saga lost"))
	r = s.webhook("evt_metrics_received", seckill.PaymentSucceeded, lost, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Equal(t, string(seckill.OutcomeReceived), r.json(t)["outcome"])
	var payments []string
	for _, line := range strings.Split(string(s.mustDo("GET", "/metrics", "", nil).body), "\n") {
		if strings.HasPrefix(line, "seckill_payment_events_total{") {
			payments = append(payments, line)
		}
	}
	require.ElementsMatch(t, []string{`seckill_payment_events_total{outcome="DELIVERED"} 1`,
		`seckill_payment_events_total{outcome="RECEIVED"} 1`}, payments)

	want := dashboardSeries(t)
	var missing []string
	require.Eventually(t, func() bool {
		names := s.metricNames()
		missing = missing[:0]
		for _, n := range want {
			if !names[n] {
				missing = append(missing, n)
			}
		}
		return len(missing) == 0
	}, 30*time.Second, 500*time.Millisecond, "series the dashboard draws but /metrics lacks: %v", &missing)

	// And every series the alerts read (deploy/prometheus/alerts.yml; `up`
	// is Prometheus' own), the worker's health gauges each read fine. A
	// lobby's draw past its beacon round without ranking (written to the
	// database as it would stand, no draw started) for the late beacon's.
	testenv.BeaconLobbySale(t, s.store, time.Now().Add(-time.Minute))
	rules, err := os.ReadFile("../deploy/prometheus/alerts.yml")
	require.NoError(t, err)
	names := s.metricNames()
	for _, n := range regexp.MustCompile(`\bseckill_[a-z_]+`).FindAllString(string(rules), -1) {
		require.True(t, names[n], "alerts.yml reads %s, which /metrics lacks", n)
	}
	body := string(s.mustDo("GET", "/metrics", "", nil).body)
	for _, check := range opsmetrics.Checks {
		require.Contains(t, body, `seckill_health_scrape_ok{check="`+check+`"} 1`)
	}

	var temporal []string
	for n := range names {
		if strings.HasPrefix(n, "temporal_") {
			temporal = append(temporal, n)
		}
	}
	sort.Strings(temporal)
	t.Logf("Temporal SDK series: %v", temporal)
}
