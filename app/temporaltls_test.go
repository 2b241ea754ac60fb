package app_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
)

// testCA is a certificate authority a test makes, with its certificate in
// file (PEM).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
	dir  string
}

var serial int64 = 1

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem"), dir: dir}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a certificate for name (server and client use), valid
// until notAfter for the DNS names and 127.0.0.1 when ip, and returns
// its certificate and key files.
func (ca *testCA) issue(t *testing.T, name string, notAfter time.Time, ip bool, dnsNames ...string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    dnsNames,
	}
	if ip {
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
}

func writeFile(t *testing.T, file, content string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	return file
}

// TestTemporalTLS_ConfigErrorsNameTheSetting: each setting for a Temporal
// beyond loopback that cannot work is a start-up error naming it.
func TestTemporalTLS_ConfigErrorsNameTheSetting(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	cert, key := ca.issue(t, "client", time.Now().Add(time.Hour), false, "client")
	otherCert, _ := ca.issue(t, "other", time.Now().Add(time.Hour), false, "other")
	expiredCert, expiredKey := ca.issue(t, "expired", time.Now().Add(-time.Hour), false, "expired")
	garbage := writeFile(t, filepath.Join(dir, "garbage.pem"), "not a PEM file\n")
	badCert := writeFile(t, filepath.Join(dir, "bad-cert.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})))
	missing := filepath.Join(dir, "missing.pem")

	read := func(env map[string]string) (app.Config, error) {
		return app.FromEnv(func(k string) string { return env[k] })
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // each in the error
	}{
		{"key without certificate", map[string]string{"TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_KEY is set but TEMPORAL_TLS_CERT is not"}},
		{"certificate without key", map[string]string{"TEMPORAL_TLS_CERT": cert},
			[]string{"TEMPORAL_TLS_CERT is set but TEMPORAL_TLS_KEY is not"}},
		{"certificate unreadable", map[string]string{"TEMPORAL_TLS_CERT": missing, "TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_CERT: open " + missing}},
		{"certificate not PEM", map[string]string{"TEMPORAL_TLS_CERT": garbage, "TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_CERT: " + garbage + " holds no PEM certificate"}},
		{"certificate file holds the key", map[string]string{"TEMPORAL_TLS_CERT": key, "TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_CERT: " + key + " holds no PEM certificate"}},
		{"certificate does not parse", map[string]string{"TEMPORAL_TLS_CERT": badCert, "TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_CERT: " + badCert + " holds a certificate that does not parse"}},
		{"key unreadable", map[string]string{"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": missing},
			[]string{"TEMPORAL_TLS_KEY: open " + missing}},
		{"key not PEM", map[string]string{"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": garbage},
			[]string{"TEMPORAL_TLS_KEY: " + garbage + " holds no usable PEM private key"}},
		{"key file holds a certificate", map[string]string{"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": otherCert},
			[]string{"TEMPORAL_TLS_KEY: " + otherCert + " holds no usable PEM private key"}},
		{"key of another certificate", map[string]string{"TEMPORAL_TLS_CERT": otherCert, "TEMPORAL_TLS_KEY": key},
			[]string{"TEMPORAL_TLS_KEY: " + key + " is not the private key of the certificate in TEMPORAL_TLS_CERT (" + otherCert + ")"}},
		{"certificate expired", map[string]string{"TEMPORAL_TLS_CERT": expiredCert, "TEMPORAL_TLS_KEY": expiredKey},
			[]string{"TEMPORAL_TLS_CERT: the certificate in " + expiredCert + " expired at"}},
		{"CA unreadable", map[string]string{"TEMPORAL_TLS_CA": missing},
			[]string{"TEMPORAL_TLS_CA: open " + missing}},
		{"CA without a certificate", map[string]string{"TEMPORAL_TLS_CA": garbage},
			[]string{"TEMPORAL_TLS_CA: " + garbage + " holds no PEM certificate"}},
		{"CA holds only a key", map[string]string{"TEMPORAL_TLS_CA": key},
			[]string{"TEMPORAL_TLS_CA: " + key + " holds no PEM certificate"}},
		{"CA does not parse", map[string]string{"TEMPORAL_TLS_CA": badCert},
			[]string{"TEMPORAL_TLS_CA: " + badCert + " holds a certificate that does not parse"}},
		{"API key with white space inside", map[string]string{"TEMPORAL_API_KEY": "abc def"},
			[]string{"TEMPORAL_API_KEY has white space inside it"}},
		{"every mistake at once", map[string]string{"TEMPORAL_TLS_KEY": key, "TEMPORAL_TLS_CA": garbage},
			[]string{"TEMPORAL_TLS_KEY is set but TEMPORAL_TLS_CERT is not", "TEMPORAL_TLS_CA: " + garbage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(tc.env)
			require.Error(t, err)
			for _, want := range tc.want {
				require.Contains(t, err.Error(), want)
			}
			// The dial says the same, for a Config not read from the
			// environment.
			cfg := app.Config{TemporalTLS: app.TemporalTLS{
				CertFile: tc.env["TEMPORAL_TLS_CERT"], KeyFile: tc.env["TEMPORAL_TLS_KEY"], CAFile: tc.env["TEMPORAL_TLS_CA"],
				APIKey: tc.env["TEMPORAL_API_KEY"],
			}}
			_, _, err = app.TemporalClientTLS(cfg.TemporalTLS, nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want[0])
		})
	}

	t.Run("none: plaintext", func(t *testing.T) {
		cfg, err := read(nil)
		require.NoError(t, err)
		require.False(t, cfg.TemporalTLS.Enabled())
		tc, creds, err := app.TemporalClientTLS(cfg.TemporalTLS, nil)
		require.NoError(t, err)
		require.Nil(t, tc)
		require.Nil(t, creds)
	})
	t.Run("all of them", func(t *testing.T) {
		cfg, err := read(map[string]string{
			"TEMPORAL_TLS_CERT": cert, "TEMPORAL_TLS_KEY": key, "TEMPORAL_TLS_CA": ca.file,
			"TEMPORAL_TLS_SERVER_NAME": "temporal.example", "TEMPORAL_API_KEY": " key-123\n",
		})
		require.NoError(t, err)
		require.Equal(t, app.TemporalTLS{CertFile: cert, KeyFile: key, CAFile: ca.file, ServerName: "temporal.example", APIKey: "key-123"}, cfg.TemporalTLS)
		tc, creds, err := app.TemporalClientTLS(cfg.TemporalTLS, nil)
		require.NoError(t, err)
		require.Equal(t, "temporal.example", tc.ServerName)
		require.NotNil(t, tc.RootCAs)
		require.NotNil(t, tc.GetClientCertificate)
		require.NotNil(t, creds)
	})
	for _, env := range []map[string]string{
		{"TEMPORAL_API_KEY": "key-123"}, {"TEMPORAL_TLS_SERVER_NAME": "temporal.example"}, {"TEMPORAL_TLS_CA": ca.file},
	} {
		t.Run("TLS on with only "+func() string {
			for k := range env {
				return k
			}
			return ""
		}(), func(t *testing.T) {
			cfg, err := read(env)
			require.NoError(t, err)
			require.True(t, cfg.TemporalTLS.Enabled())
			tc, _, err := app.TemporalClientTLS(cfg.TemporalTLS, nil)
			require.NoError(t, err)
			require.NotNil(t, tc)
			require.Nil(t, tc.GetClientCertificate)
		})
	}
}

// TestTemporalTLS_ClientCertificateReloaded: the client certificate is
// read again at each handshake, so a renewed one is presented from the
// next connection on; a renewal that cannot be read keeps the one before.
func TestTemporalTLS_ClientCertificateReloaded(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "ca")
	first, firstKey := ca.issue(t, "first", time.Now().Add(time.Hour), false, "first")
	second, secondKey := ca.issue(t, "second", time.Now().Add(2*time.Hour), false, "second")
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(certFile, keyFile string) {
		for from, to := range map[string]string{certFile: cert, keyFile: key} {
			b, err := os.ReadFile(from)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(to, b, 0o600))
		}
	}
	install(first, firstKey)
	var logs bytes.Buffer
	tc, _, err := app.TemporalClientTLS(app.TemporalTLS{CertFile: cert, KeyFile: key}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	presented := func() string {
		c, err := tc.GetClientCertificate(&tls.CertificateRequestInfo{})
		require.NoError(t, err)
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		require.NoError(t, err)
		return leaf.Subject.CommonName
	}
	require.Equal(t, "first", presented())
	install(second, secondKey) // cert-manager renewed it
	require.Equal(t, "second", presented())
	writeFile(t, key, "half written")
	require.Equal(t, "second", presented())
	require.Contains(t, logs.String(), "cannot read the Temporal client certificate again")
}
