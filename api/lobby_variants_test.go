package api_test

import (
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
	"github.com/seckill/seckill/draw"
)

// shoeLobby creates a sale of two sizes (eu-42: 3, eu-43: 5) with a limit
// of 2 per buyer whose lobby is open (it starts in an hour).
func (r *handlerRig) shoeLobby(t *testing.T) int64 {
	t.Helper()
	now := time.Now().UTC()
	a := r.do(t, "POST", "/api/v1/sales", "admin", true, map[string]any{
		"name": "Runner 1", "currency": "eur", "limit_per_buyer": 2,
		"variants": []map[string]any{
			{"sku": "eu-42", "name": "EU 42", "price_cents": 12000, "stock": 3},
			{"sku": "eu-43", "name": "EU 43", "price_cents": 12500, "stock": 5},
		},
		"lobby_opens_at": now.Add(-time.Minute).Format(time.RFC3339),
		"starts_at":      now.Add(time.Hour).Format(time.RFC3339), "ends_at": now.Add(2 * time.Hour).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	id, err := strconv.ParseInt(a.body["id"].(string), 10, 64)
	require.NoError(t, err)
	return id
}

func lobbyPath(id int64) string { return "/api/v1/sales/" + strconv.FormatInt(id, 10) + "/lobby" }

// A lobby of sizes takes a claim's body: the size (required: there are
// two) and 1..limit_per_buyer units. One entry per buyer per sale: the
// same body again answers the same entry, another size or quantity is
// ALREADY_ENTERED with the entry.
func TestLobby_AnEntryIsForOneSizeAndQuantityOncePerBuyer(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id := r.shoeLobby(t)

	for name, tc := range map[string]struct {
		body  any
		field string
	}{
		"no sku":          {nil, "sku"},
		"an unknown sku":  {map[string]any{"sku": "eu-44"}, "sku"},
		"a quantity of 0": {map[string]any{"sku": "eu-42", "quantity": 0}, "quantity"},
		"over the limit":  {map[string]any{"sku": "eu-42", "quantity": 3}, "quantity"},
	} {
		a := r.do(t, "POST", lobbyPath(id), "alice", false, tc.body)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %v", name, a.body)
		require.Equal(t, string(seckill.CodeInvalidRequest), a.code(), name)
		require.True(t, strings.HasPrefix(a.body["detail"].(string), tc.field+":"), "%s: %v", name, a.body["detail"])
	}

	a := r.do(t, "POST", lobbyPath(id), "alice", false, map[string]any{"sku": "eu-43", "quantity": 2})
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "ENTERED", a.body["status"])
	require.Equal(t, "eu-43", a.body["sku"])
	require.Equal(t, float64(2), a.body["quantity"])
	entry := a.body["entry"].(string)
	require.Len(t, entry, 32)

	again := r.do(t, "POST", lobbyPath(id), "alice", false, map[string]any{"sku": "eu-43", "quantity": 2})
	require.Equal(t, http.StatusOK, again.status, "%v", again.body)
	require.Equal(t, entry, again.body["entry"])

	for _, body := range []map[string]any{{"sku": "eu-42", "quantity": 2}, {"sku": "eu-43", "quantity": 1}, {"sku": "eu-43"}} {
		a := r.do(t, "POST", lobbyPath(id), "alice", false, body)
		require.Equal(t, http.StatusConflict, a.status, "%v: %v", body, a.body)
		require.Equal(t, string(seckill.CodeAlreadyEntered), a.code())
		require.Equal(t, entry, a.body["entry"], "with the entry they have")
	}

	// Another buyer enters for the other size, one unit by default.
	b := r.do(t, "POST", lobbyPath(id), "bob", false, map[string]any{"sku": "eu-42"})
	require.Equal(t, http.StatusCreated, b.status, "%v", b.body)
	require.Equal(t, float64(1), b.body["quantity"])
}

// GET /draw/entries lists one line per entry, `<entry hex> <sku>
// <quantity>`, sorted ascending by entry; GET /draw shows, per variant,
// the units the draw gave and the entries it admitted.
func TestLobby_TheDrawsEntriesNameTheirSizeAndQuantity(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	id := r.shoeLobby(t)
	want := map[string]string{}
	for i, body := range []map[string]any{{"sku": "eu-42", "quantity": 2}, {"sku": "eu-43"}, {"sku": "eu-43", "quantity": 2}, {"sku": "eu-42"}} {
		a := r.do(t, "POST", lobbyPath(id), "u"+strconv.Itoa(i), false, body)
		require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
		want[a.body["entry"].(string)] = a.body["sku"].(string) + " " + strconv.Itoa(int(a.body["quantity"].(float64)))
	}
	// The draw: ranked (with the stock it gives fixed), then done.
	ctx := t.Context()
	stock, err := r.st.FreezeDrawStock(ctx, id)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"eu-42": 3, "eu-43": 5}, stock)
	require.NoError(t, r.st.CloseLobby(ctx, id))
	require.NoError(t, r.st.MarkRanked(ctx, id, len(want), len(want)))
	require.NoError(t, r.st.FinishDraw(ctx, id))

	req := httptest.NewRequest("GET", "/api/v1/sales/"+strconv.FormatInt(id, 10)+"/draw/entries", nil)
	resp := contract.Test(t, r.srv.App(), req)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(string(raw), "\n"), "every line ends with a newline")
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	require.Len(t, lines, len(want))
	prev := ""
	for _, line := range lines {
		f := strings.Split(line, " ")
		require.Len(t, f, 3, "%q", line)
		_, err := draw.ParseEntry(f[0])
		require.NoError(t, err)
		require.Greater(t, f[0], prev, "sorted ascending by entry")
		prev = f[0]
		require.Equal(t, want[f[0]], f[1]+" "+f[2], "entry %s", f[0])
	}

	d := r.do(t, "GET", "/api/v1/sales/"+strconv.FormatInt(id, 10)+"/draw", "", false, nil)
	require.Equal(t, http.StatusOK, d.status, "%v", d.body)
	require.Equal(t, float64(4), d.body["entries"])
	require.Equal(t, []any{
		map[string]any{"sku": "eu-42", "stock": 3.0, "admitted": 0.0},
		map[string]any{"sku": "eu-43", "stock": 5.0, "admitted": 0.0},
	}, d.body["variants"])
}
