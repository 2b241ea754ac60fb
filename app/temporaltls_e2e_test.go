//go:build !slim

package app_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	sdkclient "go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/devserver"
	"github.com/seckill/seckill/saga"
)

// TestTemporalTLS_SagaOverMutualTLS runs the system against a Temporal
// whose frontend serves TLS and requires a client certificate its CA
// signed, as a self-hosted cluster beyond loopback does: a saga goes
// claim → AWAITING_PAYMENT → paid by webhook → PAID, the command-line
// tools reach it too, every call carries TEMPORAL_API_KEY, and clients
// without a certificate, with one another CA signed, without the CA or
// in plaintext are refused.
func TestTemporalTLS_SagaOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "temporal-ca")
	// The server's certificate names temporal.test only, not 127.0.0.1:
	// the clients need TEMPORAL_TLS_SERVER_NAME.
	serverCert, serverKey := ca.issue(t, "frontend", time.Now().Add(time.Hour), false, "temporal.test")
	clientCert, clientKey := ca.issue(t, "seckill", time.Now().Add(time.Hour), false, "seckill")
	systemCert, systemKey := ca.issue(t, "temporal-system-worker", time.Now().Add(time.Hour), false, "temporal-system-worker")
	rogue := newTestCA(t, dir, "rogue-ca")
	rogueCert, rogueKey := rogue.issue(t, "rogue", time.Now().Add(time.Hour), false, "rogue")

	// Every "authorization" the frontend receives, by method.
	var (
		mu     sync.Mutex
		bearer = map[string]string{}
	)
	capture := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("authorization"); len(v) > 0 {
			mu.Lock()
			bearer[info.FullMethod] = v[0]
			mu.Unlock()
		}
		return handler(ctx, req)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range saga.SearchAttributeNames {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	level := "fatal"
	if os.Getenv("SECKILL_TEST_LOG") != "" {
		level = "info"
	}
	const ns = "seckill-tls"
	began := time.Now()
	ts, err := devserver.Start(devserver.Config{
		UIPort: -1, Namespace: ns, SearchAttributes: attrs, LogLevel: level,
		TLS: &devserver.TLS{
			CertFile: serverCert, KeyFile: serverKey, ClientCAFile: ca.file,
			RootCAFile: ca.file, ServerName: "temporal.test",
			ClientCertFile: systemCert, ClientKeyFile: systemKey,
		},
		FrontendInterceptors: []grpc.UnaryServerInterceptor{capture},
	})
	require.NoError(t, err)
	t.Logf("Temporal with mutual TLS started in %s", time.Since(began).Round(time.Millisecond))
	// Registered first, so it runs last: after the system has stopped.
	t.Cleanup(func() { _ = ts.Stop() })

	good := app.TemporalTLS{CertFile: clientCert, KeyFile: clientKey, CAFile: ca.file, ServerName: "temporal.test", APIKey: "tmprl-test-key"}
	dial := func(tt app.TemporalTLS) error {
		cfg := app.Config{TemporalAddress: ts.Address(), Namespace: ns, TemporalTLS: tt}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := app.DialTemporal(ctx, cfg, sdkclient.Options{Logger: nopLogger{}})
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.CheckHealth(ctx, nil)
		return err
	}

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			tls  app.TemporalTLS
			want string
		}{
			{"no client certificate", app.TemporalTLS{CAFile: ca.file, ServerName: "temporal.test"}, "TLS handshake failed"},
			{"a certificate another CA signed", app.TemporalTLS{CertFile: rogueCert, KeyFile: rogueKey, CAFile: ca.file, ServerName: "temporal.test"}, "TLS handshake failed"},
			{"the server's CA not trusted", app.TemporalTLS{CertFile: clientCert, KeyFile: clientKey, ServerName: "temporal.test"}, "TLS handshake failed"},
			{"the server's name not asked for", app.TemporalTLS{CertFile: clientCert, KeyFile: clientKey, CAFile: ca.file}, "TLS handshake failed"},
			{"plaintext", app.TemporalTLS{}, "if it requires TLS, set TEMPORAL_TLS_CA"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				began := time.Now()
				err := dial(tc.tls)
				require.Error(t, err)
				require.Contains(t, err.Error(), tc.want)
				t.Logf("refused in %s: %v", time.Since(began).Round(time.Millisecond), err)
			})
		}
		require.NoError(t, dial(good))
	})

	s := startSystem(t, systemOptions{
		configure: func(cfg *app.Config) {
			cfg.TemporalAddress, cfg.Namespace, cfg.TemporalTLS = ts.Address(), ns, good
		},
		dev: func(o *app.DevOptions) { o.TemporalAddress, o.TemporalUIURL = ts.Address(), "" },
	})
	sale := s.createSale(1, time.Minute)
	r := s.claim(sale, "tls-buyer")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	order := r.json(t)["order_id"].(string)
	s.waitOrder(order, "tls-buyer", seckill.StatusAwaitingPayment, 30*time.Second)
	r = s.webhook("evt_tls_paid", seckill.PaymentSucceeded, order, 990)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	// The command-line tools dial the same way: order wait follows the
	// saga to its end.
	line, err := app.WaitOrder(context.Background(), s.cfg, s.info.APIURL, mustInt(t, order), "", 30*time.Second)
	require.NoError(t, err)
	require.Contains(t, line, string(seckill.StatusPaid))
	var out bytes.Buffer
	require.NoError(t, app.SagasCommand(context.Background(), s.cfg, []string{"versions"}, &out))
	s.requireAudit(sale)

	// TEMPORAL_API_KEY went with the calls: the starts, the worker's
	// polls, the tools' reads.
	mu.Lock()
	defer mu.Unlock()
	for _, method := range []string{"PollWorkflowTaskQueue", "PollActivityTaskQueue", "SignalWorkflowExecution", "DescribeWorkflowExecution"} {
		require.Contains(t, bearer, "/temporal.api.workflowservice.v1.WorkflowService/"+method)
	}
	for method, v := range bearer {
		require.Equal(t, "Bearer tmprl-test-key", v, method)
	}
}
