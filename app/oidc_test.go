//go:build !slim

package app_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/oidcop"
)

// keycloakAdmin is SECKILL_ADMIN_CLAIM as a Keycloak realm role, and
// keycloakRoles the claim such a provider puts in an admin's token.
const keycloakAdmin = "/realm_access/roles=seckill-admin"

func keycloakRoles(roles ...string) map[string]any {
	return map[string]any{"realm_access": map[string]any{"roles": roles}}
}

// A shop runs seckill against its own identity provider: a real OpenID
// provider (zitadel/oidc's op) on loopback issues every token through its
// token endpoint. The provider is down while seckill starts: the API
// answers /readyz 503 and starts serving once the provider's keys load.
// Then a buyer whose provider subject does not fit the old pattern
// (auth0|...) claims and pays, an admin by realm role creates the sale,
// the provider rotates to an ES256 key and the first token naming it is
// accepted at once, the old key's token until the key leaves the set, and
// every refusal is a 401 with the Bearer challenge.
func TestOIDC_AShopsProviderSignsBuyersAndAdminsIn(t *testing.T) {
	op := oidcop.Start(t, oidcop.Options{Down: true})
	addr := freeAddr(t)
	mint := func(user string, admin bool) string {
		var claims map[string]any
		if admin {
			claims = keycloakRoles("offline_access", "seckill-admin")
		}
		return op.Token(t, user, claims, []string{"shop-web", "seckill"}, time.Hour)
	}

	// Until the provider answers, /readyz says why the API is not ready;
	// then the provider comes up.
	notReady := make(chan string, 1)
	go func() {
		defer func() { _ = op.Up() }()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err == nil {
				body := make([]byte, 512)
				n, _ := resp.Body.Read(body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					notReady <- string(body[:n])
					time.Sleep(time.Second) // the API keeps waiting meanwhile
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		notReady <- "never answered 503"
	}()
	s := startSystem(t, systemOptions{
		configure: func(c *app.Config) {
			c.JWTSecret = nil
			c.OIDCIssuer = op.Issuer()
			c.AdminClaim = auth.MustAdminClaim(keycloakAdmin)
			c.JWKSRefresh = 500 * time.Millisecond
			c.HTTPAddr = addr
		},
		mint: mint,
	})
	require.Contains(t, <-notReady, `"auth":"unavailable"`)
	require.Equal(t, http.StatusOK, s.mustDo("GET", "/readyz", "", nil).status)

	sale := s.createSale(3, time.Minute)
	r := s.mustDo("POST", "/api/v1/sales", s.token("keycloak-user-without-role", false), []byte(`{}`))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	require.Equal(t, "FORBIDDEN", r.json(t)["code"])

	buyer := "auth0|5f3c9a2b77e1d40068a1b2c3"
	oldKID := op.KIDs()[0]
	oldToken := s.token(buyer, false)
	r = s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", oldToken, nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	orderID := r.json(t)["order_id"].(string)
	o := s.waitOrder(orderID, buyer, seckill.StatusAwaitingPayment, 30*time.Second)
	require.Equal(t, buyer, o.UserID)
	require.Equal(t, http.StatusOK, s.webhook("evt_oidc_1", seckill.PaymentSucceeded, orderID, o.AmountCents).status)
	s.waitOrder(orderID, buyer, seckill.StatusPaid, 30*time.Second)

	// The provider rotates to an ES256 key: the first token naming it
	// reads the set at once (no wait for the refresh), and the old key's
	// token works while the old key is published.
	newKID := op.Rotate(t, "ES256")
	require.NotEqual(t, oldKID, newKID)
	second := "f47ac10b-58cc-4372-a567-0e02b2c3d479" // a UUID subject
	r = s.claim(sale, second)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	secondOrder := r.json(t)["order_id"].(string)
	s.waitOrder(secondOrder, second, seckill.StatusAwaitingPayment, 30*time.Second)
	r = s.mustDo("POST", "/api/v1/orders/"+secondOrder+"/cancel", s.token(second, false), nil)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Equal(t, http.StatusOK, s.mustDo("GET", "/api/v1/orders/"+orderID, oldToken, nil).status)
	op.Retire(t, oldKID)
	require.Eventually(t, func() bool {
		return s.mustDo("GET", "/api/v1/orders/"+orderID, oldToken, nil).status == http.StatusUnauthorized
	}, 15*time.Second, 100*time.Millisecond, "a retired key's token is refused after the next read of the set")

	other := oidcop.Start(t, oidcop.Options{Alg: "ES256"})
	for name, tok := range map[string]string{
		"wrong audience":           op.Token(t, buyer, nil, []string{"shop-web"}, time.Hour),
		"expired":                  op.Token(t, buyer, nil, []string{"seckill"}, -time.Minute),
		"another provider's token": other.Token(t, buyer, keycloakRoles("seckill-admin"), []string{"seckill"}, time.Hour),
		"a retired key's token":    oldToken,
		"not a token":              "abc.def.ghi",
	} {
		r := s.mustDo("POST", "/api/v1/sales/"+sale+"/claims", tok, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", name, r.body)
		require.Equal(t, "UNAUTHENTICATED", r.json(t)["code"], name)
		require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer error="invalid_token"`), "%s: %q", name, r.header.Get("WWW-Authenticate"))
	}
	s.requireAudit(sale)
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
