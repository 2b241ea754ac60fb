package promcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/promcheck"
)

func scrape(t *testing.T, at time.Time, body string) *promcheck.Scrape {
	t.Helper()
	s, err := promcheck.Parse("seckill-worker", "w:9100", at, strings.NewReader(body))
	require.NoError(t, err)
	return s
}

// Counters rise at the rate seen between A and B, ages keep ageing, other
// gauges hold, a series B lacks goes stale, one Base lacks starts absent.
func TestBuildSeries_CountersRiseAgesAgeAndOtherGaugesHold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	base := scrape(t, t0, `# TYPE c_total counter
c_total{k="a"} 1
# TYPE age_seconds gauge
age_seconds 0
# TYPE g gauge
g 7
# TYPE gone gauge
gone 1
`)
	a := scrape(t, t0.Add(10*time.Second), `# TYPE c_total counter
c_total{k="a"} 5
# TYPE age_seconds gauge
age_seconds 3
# TYPE g gauge
g 2
`)
	b := scrape(t, t0.Add(20*time.Second), `# TYPE c_total counter
c_total{k="a"} 10
c_total{k="new"} 4
# TYPE age_seconds gauge
age_seconds 13
# TYPE g gauge
g 3
# TYPE h histogram
h_bucket{le="1"} 2
h_bucket{le="+Inf"} 3
h_sum 4.5
h_count 3
`)
	got := map[string]string{}
	for _, s := range promcheck.BuildSeries([]promcheck.Target{{Base: base, A: a, B: b}}, 10) {
		got[s.Series] = s.Values
	}
	require.Equal(t, map[string]string{
		`up{instance="w:9100",job="seckill-worker"}`:                 "1 1x9",
		`c_total{instance="w:9100",job="seckill-worker",k="a"}`:      "1 10+30x9",
		`c_total{instance="w:9100",job="seckill-worker",k="new"}`:    "_ 4+0x9",
		`age_seconds{instance="w:9100",job="seckill-worker"}`:        "0 13+60x9",
		`g{instance="w:9100",job="seckill-worker"}`:                  "7 3+0x9",
		`gone{instance="w:9100",job="seckill-worker"}`:               "1 stale _x8",
		`h_bucket{instance="w:9100",job="seckill-worker",le="1"}`:    "_ 2+0x9",
		`h_bucket{instance="w:9100",job="seckill-worker",le="+Inf"}`: "_ 3+0x9",
		`h_sum{instance="w:9100",job="seckill-worker"}`:              "_ 4.5+0x9",
		`h_count{instance="w:9100",job="seckill-worker"}`:            "_ 3+0x9",
	}, got)

	down := promcheck.Down("seckill-worker", "w:9100", t0.Add(30*time.Second))
	for _, s := range promcheck.BuildSeries([]promcheck.Target{{Base: b, A: down, B: down}}, 10) {
		if strings.HasPrefix(s.Series, "up{") {
			require.Equal(t, "1 0x9", s.Values)
		} else {
			require.True(t, strings.HasSuffix(s.Values, " stale _x8"), "%s %s", s.Series, s.Values)
		}
	}
}

// Got reads the alerts promtool found firing from its failure report.
func TestGot_ReadsTheFiringAlertsFromPromtoolsReport(t *testing.T) {
	out := `Processing test file: t.yml
  FAILED:
    name: one,
    alertname: A, time: 40m, 
        exp:[
            0:
              Labels:{a="2", alertname="A"}
              Annotations:{}
            ], 
        got:[
            0:
              Labels:{a="2", alertname="A"}
              Annotations:{s="say \"hi\", then go", t="x"},
            1:
              Labels:{a="3", alertname="A"}
              Annotations:{s="+Inf"}
            ]
    name: two,
    alertname: B, time: 40m, 
        exp:[
            0:
              Labels:{alertname="B"}
              Annotations:{}
            ], 
        got:[]
`
	require.Equal(t, map[string]map[string][]promcheck.Alert{
		"one": {"A": {
			{Labels: map[string]string{"a": "2"}, Annotations: map[string]string{"s": `say "hi", then go`, "t": "x"}},
			{Labels: map[string]string{"a": "3"}, Annotations: map[string]string{"s": "+Inf"}},
		}},
		"two": {"B": {}},
	}, promcheck.Got(out))
}

func TestSane_RefusesAnAnnotationWithAnEmptyValueOrAMissingRunbook(t *testing.T) {
	ok := promcheck.Alert{Annotations: map[string]string{"summary": "A refund has been PENDING for 39m 0s",
		"description": "1 refunds are PENDING.", "runbook_url": "https://x/runbook.md#a"}}
	require.Empty(t, promcheck.Sane(ok))
	bad := promcheck.Alert{Annotations: map[string]string{"summary": " refunds are PENDING", "description": "<no value>"}}
	require.Len(t, promcheck.Sane(bad), 3)
}
