package seckill_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/opsmetrics"
	"github.com/seckill/seckill/reconcile"
	"github.com/seckill/seckill/relay"
)

// alertRule is one rule of deploy/prometheus/alerts.yml, as its text says.
type alertRule struct {
	name, text string
}

func readAlerts(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile("deploy/prometheus/alerts.yml")
	require.NoError(t, err)
	parts := regexp.MustCompile(`(?m)^\s*- alert: `).Split(string(b), -1)[1:]
	require.NotEmpty(t, parts)
	out := make([]alertRule, len(parts))
	for i, p := range parts {
		name, rest, _ := strings.Cut(p, "\n")
		out[i] = alertRule{name: strings.TrimSpace(name), text: rest}
	}
	return out
}

// describer collects the descriptors of what registers on it.
type describer struct{ descs []*prometheus.Desc }

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	c.Describe(ch)
	close(ch)
	for desc := range ch {
		d.descs = append(d.descs, desc)
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// workerLabels maps each metric the worker's own collectors declare to
// its variable labels.
func workerLabels(t *testing.T) map[string][]string {
	t.Helper()
	d := &describer{}
	require.NoError(t, opsmetrics.New(nil, nil, opsmetrics.Options{}).Register(d))
	require.NoError(t, relay.New(nil, nil, relay.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil))).Register(d))
	require.NoError(t, (&reconcile.Reconciler{}).Register(d))
	out := map[string][]string{}
	desc := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for _, dd := range d.descs {
		m := desc.FindStringSubmatch(dd.String())
		require.NotNil(t, m, dd.String())
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
	}
	return out
}

// Every series an alert reads is one seckill exports: its name is a
// string literal of the code, and when the worker's collectors declare it,
// every label the rule selects on or aggregates by is one of its own
// (or job/instance, which Prometheus adds). Every alert has a severity,
// a summary, a description and a runbook_url whose section exists in
// docs/runbook.md, and alerts_test.yml tests it firing and not firing.
func TestAlerts_EverySeriesIsExported(t *testing.T) {
	alerts := readAlerts(t)
	var code strings.Builder
	require.NoError(t, filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || path == "deploy") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			code.Write(b)
		}
		return nil
	}))
	declared := workerLabels(t)
	runbook, err := os.ReadFile("docs/runbook.md")
	require.NoError(t, err)
	tests, err := os.ReadFile("deploy/prometheus/alerts_test.yml")
	require.NoError(t, err)

	series := regexp.MustCompile(`\bseckill_[a-z_]+`)
	selector := regexp.MustCompile(`(seckill_[a-z_]+)\{([^}]*)\}`)
	matcher := regexp.MustCompile(`([a-z_]+)\s*(?:=~|!~|!=|=)`)
	by := regexp.MustCompile(`by \(([^)]*)\) \((?:[a-z_]+\()?(seckill_[a-z_]+)`)
	anchor := regexp.MustCompile(`runbook_url: https://github\.com/seckill/seckill/blob/main/docs/runbook\.md#([a-z0-9-]+)`)
	headings := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[strings.ToLower(strings.ReplaceAll(strings.TrimSpace(h), " ", "-"))] = true
		}
	}
	usesLabel := func(metric, label string) {
		t.Helper()
		labels, ok := declared[metric]
		if !ok || label == "job" || label == "instance" {
			return
		}
		require.Contains(t, labels, label, "%s has no label %s", metric, label)
	}
	for _, a := range alerts {
		for _, name := range series.FindAllString(a.text, -1) {
			require.Contains(t, code.String(), `"`+name+`"`, "alert %s reads %s, which no code exports", a.name, name)
		}
		for _, m := range selector.FindAllStringSubmatch(a.text, -1) {
			for _, l := range matcher.FindAllStringSubmatch(m[2], -1) {
				usesLabel(m[1], l[1])
			}
		}
		for _, m := range by.FindAllStringSubmatch(a.text, -1) {
			for _, l := range strings.Split(m[1], ",") {
				usesLabel(m[2], strings.TrimSpace(l))
			}
		}
		for _, field := range []string{"severity: ", "summary: ", "description: ", "runbook_url: "} {
			require.Contains(t, a.text, field, "alert %s has a %s", a.name, strings.TrimSuffix(field, ": "))
		}
		m := anchor.FindStringSubmatch(a.text)
		require.NotNil(t, m, "alert %s's runbook_url is a section of docs/runbook.md", a.name)
		require.Equal(t, strings.ToLower(a.name), m[1], "alert %s's runbook_url names its own section", a.name)
		require.True(t, headings[m[1]], "docs/runbook.md has a section ## %s", a.name)

		fires := regexp.MustCompile(`alertname: ` + a.name + `\n\s*exp_alerts:\n`).Match(tests)
		silent := regexp.MustCompile(`alertname: ` + a.name + `\n\s*exp_alerts: \[\]`).Match(tests)
		require.True(t, fires && silent, "alerts_test.yml tests %s firing (%v) and not firing (%v)", a.name, fires, silent)
	}
	seen := map[string]bool{}
	for _, a := range alerts {
		require.False(t, seen[a.name], "alert %s is defined once", a.name)
		seen[a.name] = true
	}
}
