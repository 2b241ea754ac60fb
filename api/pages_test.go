package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
	"github.com/seckill/seckill/auth"
)

// get sends a GET through the app and returns status, headers and body.
func (r *claimRig) get(t *testing.T, path, token string) (int, http.Header, []byte) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp := contract.Test(t, r.srv.App(), req)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func TestPages_ServedWithoutDevToolsByDefault(t *testing.T) {
	r := newClaimRig(t)
	for path, want := range map[string]string{
		"/":                 `data-page="sales"`,
		"/sales/42":         `data-page="sale"`,
		"/assets/app.js":    "const Seckill",
		"/assets/style.css": ".card",
	} {
		status, h, body := r.get(t, path, "")
		require.Equal(t, http.StatusOK, status, path)
		require.Contains(t, string(body), want, path)
		if strings.HasSuffix(path, "/") || strings.Contains(path, "/sales/") {
			require.Contains(t, h.Get("Content-Type"), "text/html")
			require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'self'")
		}
	}
	status, _, body := r.get(t, "/ui/config", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"demo_sign_in": false, "checkout_url": "", "payment_provider": "dev"}`, string(body))

	// Neither dev tool exists unless asked for.
	status, _, _ = r.get(t, "/dev/checkout", "")
	require.Equal(t, http.StatusNotFound, status)
	a := r.send(t, "/dev/sign-in", "", "", []byte(`{"user_id":"alice"}`))
	require.Equal(t, http.StatusNotFound, a.status)
	a = r.send(t, "/dev/checkout/1", "", "", []byte(`{"outcome":"succeeded"}`))
	require.Equal(t, http.StatusNotFound, a.status)
}

func TestDemoSignIn_GivesAUserTokenOnlyWhenEnabled(t *testing.T) {
	r := newClaimRigWith(t, api.Config{Dev: api.DevTools{SignIn: true}})
	a := r.send(t, "/dev/sign-in", "", "", []byte(`{"user_id":"alice"}`))
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var out struct {
		Token  string `json:"token"`
		UserID string `json:"user_id"`
	}
	require.NoError(t, json.Unmarshal(a.body, &out))
	require.Equal(t, "alice", out.UserID)
	p, err := auth.NewSecret(r.secret, "", auth.AdminClaim{}).Verify(context.Background(), out.Token)
	require.NoError(t, err)
	p.Claims = nil
	require.Equal(t, auth.Principal{UserID: "alice"}, p)

	status, _, body := r.get(t, "/ui/config", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"demo_sign_in": true, "checkout_url": "", "payment_provider": "dev"}`, string(body))
}

func TestSaleStats_CountEveryAnswerAndTheSellOut(t *testing.T) {
	r := newClaimRig(t)
	r.serve(t) // the counts are flushed while serving
	admin, err := auth.SignToken(r.secret, "ops", true, time.Hour)
	require.NoError(t, err)
	user, err := auth.SignToken(r.secret, "alice", false, time.Hour)
	require.NoError(t, err)
	sale := strconv.FormatInt(r.tiny, 10)

	require.Equal(t, http.StatusAccepted, r.claimAs(t, "alice", r.tiny).status)
	require.Equal(t, seckill.CodeAlreadyClaimed, r.claimAs(t, "alice", r.tiny).decoded.Code)
	require.Equal(t, seckill.CodeSoldOut, r.claimAs(t, "bob", r.tiny).decoded.Code)   // the script
	require.Equal(t, seckill.CodeSoldOut, r.claimAs(t, "carol", r.tiny).decoded.Code) // the flag

	var st seckill.SaleStatsJSON
	require.Eventually(t, func() bool {
		status, _, body := r.get(t, "/api/v1/sales/"+sale+"/stats", admin)
		require.Equal(t, http.StatusOK, status, "%s", body)
		require.NoError(t, json.Unmarshal(body, &st))
		return st.Claims.Total == 4
	}, 10*time.Second, 50*time.Millisecond, "claim counts never reached 4: %+v", st.Claims)
	require.Equal(t, seckill.ClaimStats{
		Total: 4, Admitted: 1,
		Rejected: map[seckill.Code]int64{seckill.CodeSoldOut: 2, seckill.CodeAlreadyClaimed: 1},
	}, st.Claims)
	require.Equal(t, sale, st.SaleID)
	require.Equal(t, seckill.StateSoldOut, st.State)
	require.Equal(t, int64(0), st.Stock.Remaining)
	require.NotNil(t, st.SoldOutAt)
	require.NotNil(t, st.TimeToSellOutSeconds)
	require.Greater(t, *st.TimeToSellOutSeconds, 3000.0) // the rig's sales started an hour ago
	require.Zero(t, st.Orders.Total, "no worker runs here, so no order rows")

	status, _, _ := r.get(t, "/api/v1/sales/"+sale+"/stats", user)
	require.Equal(t, http.StatusForbidden, status)
	status, _, _ = r.get(t, "/api/v1/sales/"+sale+"/stats", "")
	require.Equal(t, http.StatusUnauthorized, status)
	status, _, body := r.get(t, "/api/v1/sales/999999999/stats", admin)
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, string(body), "SALE_NOT_FOUND")
}
