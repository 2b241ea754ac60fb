package app

import (
	"crypto/tls"
	"log/slog"

	sdkclient "go.temporal.io/sdk/client"
)

// TemporalClientTLS exposes TemporalTLS.client to the tests.
func TemporalClientTLS(t TemporalTLS, log *slog.Logger) (*tls.Config, sdkclient.Credentials, error) {
	return t.client(log)
}
