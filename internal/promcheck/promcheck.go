// Package promcheck evaluates Prometheus alerting rules on what seckill's
// processes really export: scrapes of their /metrics (Prometheus text
// format) become the input series of a promtool rule unit test
// (`promtool test rules`), so the rules are evaluated by Prometheus' own
// engine on live data. The end-to-end test TestAlerts_Live (package app)
// uses it; promtool is never linked (Prometheus' Go module conflicts with
// the OpenTelemetry versions seckill pins), only run.
//
// A scrape is one instant, and the alerts need minutes (their `for`, their
// thresholds on ages, their rate windows). Each target contributes three
// scrapes to a test group: Base, shown at minute 0 (what the target
// exported before the condition was caused), and A and B, taken some
// seconds apart once the condition holds, whose state is carried on over
// the following minutes as if the condition lasted:
//
//   - a counter (and a histogram's or summary's _bucket, _sum, _count)
//     keeps rising at the rate seen from A to B, so rate() and increase()
//     see the real rate; a series that A lacks (a label value seen first
//     in B) is held at B's value, as Prometheus could not tell its rate
//     either;
//   - a gauge of an age (a name ending in _seconds whose value rose from A
//     to B by the time between them: the thing it measures was waiting
//     all along) keeps ageing, 60 s a minute;
//   - any other gauge is held at B's value;
//   - a series B lacks (a check that failed, a target down) goes stale;
//   - up{job, instance} is 1 for each scrape that answered, 0 otherwise.
//
// Every series carries the job and instance labels Prometheus adds.
package promcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Point is one sample of a scrape.
type Point struct {
	Name   string
	Labels map[string]string // with job and instance
	Value  float64
	// Counter: a counter, or a histogram's or summary's _bucket, _sum or
	// _count.
	Counter bool
}

// Key is the point's series, as PromQL writes it.
func (p Point) Key() string { return seriesString(p.Name, p.Labels) }

// Scrape is one scrape of one target.
type Scrape struct {
	Job, Instance string
	At            time.Time
	Up            bool
	Points        map[string]Point // by Key
}

// Down is a scrape that failed: the target did not answer.
func Down(job, instance string, at time.Time) *Scrape {
	return &Scrape{Job: job, Instance: instance, At: at, Points: map[string]Point{}}
}

// Parse reads a /metrics body in the Prometheus text format.
func Parse(job, instance string, at time.Time, body io.Reader) (*Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		return nil, fmt.Errorf("parse the scrape of %s (%s): %w", job, instance, err)
	}
	s := &Scrape{Job: job, Instance: instance, At: at, Up: true, Points: map[string]Point{}}
	add := func(name string, base map[string]string, extra map[string]string, v float64, counter bool) {
		ls := make(map[string]string, len(base)+len(extra)+2)
		for k, v := range base {
			if k == "job" || k == "instance" {
				k = "exported_" + k // as Prometheus does (honor_labels: false)
			}
			ls[k] = v
		}
		for k, v := range extra {
			ls[k] = v
		}
		ls["job"], ls["instance"] = job, instance
		pt := Point{Name: name, Labels: ls, Value: v, Counter: counter}
		s.Points[pt.Key()] = pt
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, ls, nil, m.GetCounter().GetValue(), true)
			case dto.MetricType_GAUGE:
				add(name, ls, nil, m.GetGauge().GetValue(), false)
			case dto.MetricType_UNTYPED:
				add(name, ls, nil, m.GetUntyped().GetValue(), false)
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				counter := f.GetType() == dto.MetricType_HISTOGRAM
				for _, b := range h.GetBucket() {
					add(name+"_bucket", ls, map[string]string{"le": formatLe(b.GetUpperBound())}, float64(b.GetCumulativeCount()), counter)
				}
				add(name+"_bucket", ls, map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()), counter)
				add(name+"_sum", ls, nil, h.GetSampleSum(), counter)
				add(name+"_count", ls, nil, float64(h.GetSampleCount()), counter)
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					add(name, ls, map[string]string{"quantile": strconv.FormatFloat(q.GetQuantile(), 'f', -1, 64)}, q.GetValue(), false)
				}
				add(name+"_sum", ls, nil, sm.GetSampleSum(), true)
				add(name+"_count", ls, nil, float64(sm.GetSampleCount()), true)
			}
		}
	}
	return s, nil
}

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Value is a point's value, or ok false when the scrape lacks it.
func (s *Scrape) Value(name string, labels map[string]string) (v float64, ok bool) {
	ls := map[string]string{"job": s.Job, "instance": s.Instance}
	for k, v := range labels {
		ls[k] = v
	}
	p, ok := s.Points[seriesString(name, ls)]
	return p.Value, ok
}

// Sum adds the values of every point named name whose labels include
// match.
func (s *Scrape) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, p := range s.Points {
		if p.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if p.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += p.Value
		}
	}
	return total
}

// Target is one target's scrapes in a test group (see the package
// comment).
type Target struct {
	Base, A, B *Scrape
	// Per, when set, is the time the counters' change from A to B stands
	// for: the test made happen back to back what runs once per Per (a
	// scheduled pass). Unset, it is the time between A and B.
	Per time.Duration
}

// Series is one input series of a promtool test.
type Series struct {
	Series string
	Values string
}

// BuildSeries turns the targets' scrapes into input series covering
// minutes 0 to minutes, sorted.
func BuildSeries(targets []Target, minutes int) []Series {
	var out []Series
	for _, t := range targets {
		up := map[string]string{"job": t.B.Job, "instance": t.B.Instance}
		out = append(out, Series{seriesString("up", up), fmt.Sprintf("%s %sx%d", bit(t.Base.Up), bit(t.B.Up), minutes-1)})
		keys := map[string]bool{}
		for _, s := range []*Scrape{t.Base, t.B} {
			for k := range s.Points {
				keys[k] = true
			}
		}
		for k := range keys {
			out = append(out, Series{k, values(t, k, minutes)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Series < out[j].Series })
	return out
}

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// values is the series' values at minutes 0..minutes.
func values(t Target, key string, minutes int) string {
	first := "_"
	if p, ok := t.Base.Points[key]; ok {
		first = num(p.Value)
	}
	b, ok := t.B.Points[key]
	if !ok {
		if first == "_" {
			return fmt.Sprintf("_x%d", minutes)
		}
		return fmt.Sprintf("%s stale _x%d", first, minutes-2)
	}
	perMinute := 0.0
	if a, ok := t.A.Points[key]; ok {
		elapsed := t.B.At.Sub(t.A.At)
		switch {
		case b.Counter && t.Per > 0:
			perMinute = Extrapolation(a, b, t.Per)
		default:
			perMinute = Extrapolation(a, b, elapsed)
		}
	}
	step := num(perMinute)
	if !strings.HasPrefix(step, "-") {
		step = "+" + step
	}
	return fmt.Sprintf("%s %s%sx%d", first, num(b.Value), step, minutes-1)
}

// Extrapolation is how much a series seen as a in one scrape and b
// elapsed later changes each minute as the condition lasts: a counter at
// its rate, an age gauge by 60 (see the package comment).
func Extrapolation(a, b Point, elapsed time.Duration) float64 {
	secs := elapsed.Seconds()
	if secs <= 0 || math.IsNaN(a.Value) || math.IsNaN(b.Value) || math.IsInf(a.Value, 0) || math.IsInf(b.Value, 0) {
		return 0
	}
	if b.Counter {
		if b.Value < a.Value {
			return 0 // reset
		}
		return (b.Value - a.Value) / secs * 60
	}
	if Ageing(a, b, elapsed) {
		return 60
	}
	return 0
}

// MinAgeing is the least time between two scrapes that tells an age
// from another gauge.
const MinAgeing = 2 * time.Second

// Ageing reports whether a gauge seen as a, then as b elapsed later, is
// an age that kept growing in between: a name in _seconds, above zero in
// a, grown by elapsed (within half a second, or a tenth of elapsed),
// elapsed at least MinAgeing.
func Ageing(a, b Point, elapsed time.Duration) bool {
	if b.Counter || !strings.HasSuffix(b.Name, "_seconds") || a.Value <= 0 || elapsed < MinAgeing {
		return false
	}
	tol := max(0.5, elapsed.Seconds()/10)
	return math.Abs((b.Value-a.Value)-elapsed.Seconds()) <= tol
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// seriesString writes a series as PromQL does: name{label="value", ...},
// labels sorted.
func seriesString(name string, labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	quotedName := !model.LegacyValidation.IsValidMetricName(name)
	if !quotedName {
		b.WriteString(name)
	}
	b.WriteByte('{')
	if quotedName {
		b.WriteString(strconv.Quote(name))
		if len(names) > 0 {
			b.WriteByte(',')
		}
	}
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		if model.LegacyValidation.IsValidLabelName(k) {
			b.WriteString(k)
		} else {
			b.WriteString(strconv.Quote(k))
		}
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// Alert is an alert expected to fire (or found firing): its labels
// (without alertname) and annotations.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
}

// String is the alert's labels, as PromQL writes them.
func (a Alert) String() string { return strings.TrimPrefix(seriesString("x", a.Labels), "x") }

// Group is one test group of a promtool rule test: its input series, and
// at EvalTime the alerts of every rule: those in Expect fire, exactly
// with those labels (and annotations, where given), every other alert
// of Alerts does not.
type Group struct {
	Name     string
	Series   []Series
	EvalTime time.Duration
	Alerts   []string           // every alert the rules define
	Expect   map[string][]Alert // by alert name
}

// File is a promtool rule unit test file.
type File struct {
	Comment   string // written at the top, each line as a YAML comment
	RuleFiles []string
	Groups    []Group
}

// Marshal writes the file in YAML.
func (f File) Marshal() []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(f.Comment), "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	b.WriteString("rule_files:\n")
	for _, r := range f.RuleFiles {
		fmt.Fprintf(&b, "  - %s\n", jsonString(r))
	}
	b.WriteString("evaluation_interval: 1m\n\ntests:\n")
	for _, g := range f.Groups {
		fmt.Fprintf(&b, "  - name: %s\n    interval: 1m\n    input_series:\n", jsonString(g.Name))
		for _, s := range g.Series {
			fmt.Fprintf(&b, "      - series: %s\n        values: %s\n", singleQuoted(s.Series), singleQuoted(s.Values))
		}
		b.WriteString("    alert_rule_test:\n")
		for _, name := range g.Alerts {
			fmt.Fprintf(&b, "      - eval_time: %s\n        alertname: %s\n", model.Duration(g.EvalTime), name)
			exp := g.Expect[name]
			if len(exp) == 0 {
				b.WriteString("        exp_alerts: []\n")
				continue
			}
			b.WriteString("        exp_alerts:\n")
			for _, a := range exp {
				b.WriteString("          - exp_labels:\n")
				writeMap(&b, "              ", a.Labels)
				if len(a.Annotations) > 0 {
					b.WriteString("            exp_annotations:\n")
					writeMap(&b, "              ", a.Annotations)
				}
			}
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func writeMap(b *bytes.Buffer, indent string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s%s: %s\n", indent, jsonString(k), jsonString(m[k]))
	}
}

// jsonString quotes s for YAML: JSON's escapes are YAML's double-quoted
// ones.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Run runs promtool with args and returns its combined output; err is
// set when it exits non-zero (or cannot run).
func Run(promtool string, args ...string) (string, error) {
	out, err := exec.Command(promtool, args...).CombinedOutput()
	return string(out), err
}

// Got reads, from the output of a failed `promtool test rules`, the
// alerts that fired where the test expected others: by group name, then
// alert name.
func Got(output string) map[string]map[string][]Alert {
	out := map[string]map[string][]Alert{}
	var group, alert string
	inGot := false
	var cur *Alert
	for _, line := range strings.Split(output, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "name: "):
			group, inGot = strings.TrimSuffix(strings.TrimPrefix(l, "name: "), ","), false
		case strings.HasPrefix(l, "alertname: "):
			alert, _, _ = strings.Cut(strings.TrimPrefix(l, "alertname: "), ",")
			inGot = false
			if out[group] == nil {
				out[group] = map[string][]Alert{}
			}
			if _, ok := out[group][alert]; !ok {
				out[group][alert] = []Alert{}
			}
		case strings.HasPrefix(l, "exp:"):
			inGot = false
		case strings.HasPrefix(l, "got:"):
			inGot = true
		case inGot && strings.HasPrefix(l, "Labels:"):
			ls, err := parseLabels(strings.TrimPrefix(l, "Labels:"))
			if err != nil {
				continue
			}
			delete(ls, "alertname")
			out[group][alert] = append(out[group][alert], Alert{Labels: ls})
			cur = &out[group][alert][len(out[group][alert])-1]
		case inGot && strings.HasPrefix(l, "Annotations:") && cur != nil:
			as, err := parseLabels(strings.TrimSuffix(strings.TrimPrefix(l, "Annotations:"), ","))
			if err == nil {
				cur.Annotations = as
			}
			cur = nil
		}
	}
	return out
}

// parseLabels reads {a="b", c="d"} as Prometheus' labels.Labels.String
// writes it.
func parseLabels(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("not a label set: %q", s)
	}
	s = s[1 : len(s)-1]
	out := map[string]string{}
	for s != "" {
		var name string
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, err
			}
			name, _ = strconv.Unquote(q)
			s = s[len(q):]
		} else {
			i := strings.IndexByte(s, '=')
			if i < 0 {
				return nil, fmt.Errorf("no = in %q", s)
			}
			name, s = s[:i], s[i:]
		}
		if !strings.HasPrefix(s, "=") {
			return nil, fmt.Errorf("no = after %q", name)
		}
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Unquote(q)
		out[name] = v
		s = strings.TrimPrefix(strings.TrimPrefix(s[1+len(q):], ","), " ")
	}
	return out, nil
}

// Sane reports what looks wrong in a fired alert's annotations: one
// missing, or a template that rendered nothing (an empty query result, a
// missing value) or failed.
func Sane(a Alert) []string {
	var bad []string
	for _, k := range []string{"summary", "description", "runbook_url"} {
		if strings.TrimSpace(a.Annotations[k]) == "" {
			bad = append(bad, k+" is empty")
		}
	}
	broken := regexp.MustCompile(`<no value>|%!|\{\{|error executing|NaN|^ |  | $| \.|\( `)
	for k, v := range a.Annotations {
		if m := broken.FindString(v); m != "" {
			bad = append(bad, fmt.Sprintf("%s has %q (a template that rendered nothing or failed): %s", k, m, v))
		}
	}
	sort.Strings(bad)
	return bad
}
