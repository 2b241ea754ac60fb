package app

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// With TLS on, a connection the server closes right after the handshake
// (a refused client certificate, under TLS 1.3) names the TLS settings,
// as the server's alert does; without TLS it is Temporal unreachable.
func TestTemporalDialError_AConnectionClosedAfterTheHandshakeNamesTheTLSSettings(t *testing.T) {
	withTLS := Config{TemporalAddress: "temporal:7233", TemporalTLS: TemporalTLS{CAFile: "ca.pem"}}
	for _, cause := range []string{
		"failed reaching server: write tcp 127.0.0.1:43736->127.0.0.1:24067: write: broken pipe",
		"failed reaching server: read tcp 127.0.0.1:43736->127.0.0.1:24067: read: connection reset by peer",
		`connection error: desc = "error reading server preface: remote error: tls: certificate required"`,
	} {
		err := temporalDialError(withTLS, errors.New(cause))
		require.ErrorContains(t, err, "the TLS handshake failed", cause)
		require.ErrorContains(t, err, "TEMPORAL_TLS_CERT", cause)
	}
	err := temporalDialError(Config{TemporalAddress: "temporal:7233"}, errors.New("write: broken pipe"))
	require.ErrorContains(t, err, "Temporal not reachable at temporal:7233")
}
