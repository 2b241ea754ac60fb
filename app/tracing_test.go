//go:build !slim

package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/tracing"
)

// spanTree is the spans of one trace, by id.
type spanTree struct {
	byID map[trace.SpanID]tracetest.SpanStub
}

func (s spanTree) names() []string {
	var out []string
	for _, sp := range s.byID {
		out = append(out, sp.Name)
	}
	sort.Strings(out)
	return out
}

// find returns the first span whose name has prefix.
func (s spanTree) find(t *testing.T, prefix string) tracetest.SpanStub {
	t.Helper()
	for _, sp := range s.byID {
		if strings.HasPrefix(sp.Name, prefix) {
			return sp
		}
	}
	t.Fatalf("no span %q in the trace: %v", prefix, s.names())
	return tracetest.SpanStub{}
}

// under reports whether ancestor is child's parent, or its parent's, ...
func (s spanTree) under(child, ancestor tracetest.SpanStub) bool {
	for sp, ok := child, true; ok; sp, ok = s.byID[sp.Parent.SpanID()] {
		if sp.Parent.SpanID() == ancestor.SpanContext.SpanID() {
			return true
		}
	}
	return false
}

// One claim that is paid is one trace: the claim's request, its Redis
// admission, the relay's start of the saga (through the outbox entry), the
// saga's workflow task, StartOrder with its SQL, and ConfirmPayment; the
// payment webhook's own trace links to it.
func TestTracing_OneTracePerOrder(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	installTracing(t, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	logs := &syncBuffer{}
	tracedClaimPaid(t, "traced", logs)

	var tree spanTree
	require.Eventually(t, func() bool {
		var claim *tracetest.SpanStub
		spans := exp.GetSpans()
		for i, sp := range spans {
			if sp.SpanKind == trace.SpanKindServer && strings.Contains(sp.Name, "/claims") {
				claim = &spans[i]
			}
		}
		if claim == nil {
			return false
		}
		tree = spanTree{byID: map[trace.SpanID]tracetest.SpanStub{}}
		for _, sp := range spans {
			if sp.SpanContext.TraceID() == claim.SpanContext.TraceID() {
				tree.byID[sp.SpanContext.SpanID()] = sp
			}
		}
		for _, sp := range tree.byID {
			if strings.HasPrefix(sp.Name, "RunActivity:ConfirmPayment") {
				return true
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "no ConfirmPayment in the claim's trace")
	t.Logf("the order's trace: %v", tree.names())

	claim := tree.find(t, "/api/v1/sales/:id/claims")
	admission := tree.find(t, "evalsha")
	relay := tree.find(t, "relay: start OrderSaga")
	run := tree.find(t, "RunWorkflow:OrderSaga")
	start := tree.find(t, "RunActivity:StartOrder")
	confirm := tree.find(t, "RunActivity:ConfirmPayment")
	require.True(t, tree.under(admission, claim), "the admission script runs in the claim's request")
	require.True(t, tree.under(relay, claim), "the relay's start continues the claim's trace")
	require.True(t, tree.under(run, relay), "the saga runs under the relay's start")
	require.True(t, tree.under(start, run))
	require.True(t, tree.under(confirm, run))
	var sql bool
	for _, sp := range tree.byID {
		for _, a := range sp.Attributes {
			if a.Key == "db.system" || a.Key == "db.system.name" {
				sql = sql || (a.Value.AsString() == "postgresql" && tree.under(sp, start))
			}
		}
	}
	require.True(t, sql, "StartOrder's SQL is in the trace: %v", tree.names())

	// The payment webhook is a request of its own, linked to the order's
	// trace.
	var linked bool
	for _, sp := range exp.GetSpans() {
		if sp.SpanKind == trace.SpanKindServer && strings.Contains(sp.Name, "/payments/webhook") {
			require.NotEqual(t, claim.SpanContext.TraceID(), sp.SpanContext.TraceID())
			for _, l := range sp.Links {
				linked = linked || l.SpanContext.TraceID() == claim.SpanContext.TraceID()
			}
		}
	}
	require.True(t, linked, "the webhook's span links to the order's trace")

	// The API's lines of a traced request carry its trace.
	var logged bool
	for _, line := range logs.lines() {
		if strings.Contains(line, `"msg":"payment event delivered"`) {
			logged = true
			require.Regexp(t, `"trace_id":"[0-9a-f]{32}".*"span_id":"[0-9a-f]{16}"`, line)
		}
	}
	require.True(t, logged, "no 'payment event delivered' line in:\n%s", strings.Join(logs.lines(), "\n"))
}

// installTracing makes tp the process's tracer provider for the test.
func installTracing(t *testing.T, tp *sdktrace.TracerProvider) {
	t.Helper()
	tracing.Install(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		_ = tp.Shutdown(context.Background())
	})
}

// tracedClaimPaid runs a system with tracing on (logging as JSON to logs,
// when given), in which user claims a unit and pays for it; it returns the
// order id.
func tracedClaimPaid(t *testing.T, user string, logs io.Writer) string {
	t.Helper()
	s := startSystem(t, systemOptions{configure: func(c *app.Config) {
		c.Tracing = true
		if logs != nil {
			c.Log = slog.New(tracing.LogHandler(slog.NewJSONHandler(logs, nil)))
		}
	}})
	sale := s.createSale(1, time.Minute)
	r := s.claim(sale, user)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orderID := r.json(t)["order_id"].(string)
	o := s.waitOrder(orderID, user, seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, http.StatusOK, s.webhook("evt_"+user, seckill.PaymentSucceeded, orderID, o.AmountCents).status)
	s.waitOrder(orderID, user, seckill.StatusPaid, 30*time.Second)
	return orderID
}
