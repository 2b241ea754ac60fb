package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// A buyer answered 201 WAITING has their place in the database (the
// durable waitlist, docs/DESIGN.md invariant 10), a retry keeps the first
// row, and leaving deletes it. While PostgreSQL refuses, a join is
// answered 503 with Retry-After, never 201, and Redis does not seat the
// buyer (the join writes its row before it asks Redis); the retry once it
// answers seats them and saves the place.
func TestWaitlist_APlaceAnswered201IsInTheDatabase(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	ctx := t.Context()
	saleID := r.createSale(t, 1)
	path := "/api/v1/sales/" + strconv.FormatInt(saleID, 10) + "/waitlist"
	rows := func() []seckill.WaitlistEntry {
		t.Helper()
		got, err := r.st.WaitlistEntries(ctx, saleID)
		require.NoError(t, err)
		return got
	}

	a := r.do(t, "POST", path, "ann", false, nil)
	require.Equal(t, "ADMITTED", a.body["status"])
	require.Empty(t, rows(), "admitted at once: nobody to put back in line")

	before := time.Now()
	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])
	got := rows()
	require.Len(t, got, 1)
	bob := got[0]
	require.Equal(t, "bob", bob.UserID)
	require.Equal(t, seckill.DefaultItem, bob.Item)
	require.Equal(t, int64(1), bob.Place, "the first join of the sale")
	require.NotZero(t, bob.OrderID)
	require.WithinDuration(t, before, bob.JoinedAt, 5*time.Second)
	a = r.do(t, "POST", path, "bob", false, nil)
	require.Equal(t, "ALREADY_WAITING", a.code())
	require.Equal(t, []seckill.WaitlistEntry{bob}, rows(), "a retry keeps the first row")

	allow := testenv.RefuseConnections(t, r.dsn)
	a = r.do(t, "POST", path, "cat", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.Equal(t, "UNAVAILABLE", a.code())
	require.NotEmpty(t, a.header.Get("Retry-After"))
	allow()
	ws, err := r.rs.WaitStateOf(ctx, saleID, "cat")
	require.NoError(t, err)
	require.False(t, ws.Waiting, "Redis was not asked")
	for range 5 {
		if a = r.do(t, "POST", path, "cat", false, nil); a.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	require.Equal(t, "WAITING", a.body["status"])
	got = rows()
	require.Len(t, got, 2, "the retry saved cat's place")
	require.Equal(t, "cat", got[1].UserID)
	require.Equal(t, int64(2), got[1].Place)

	// Leaving while PostgreSQL refuses: 503, and bob is still in line.
	allow = testenv.RefuseConnections(t, r.dsn)
	a = r.do(t, "DELETE", path+"/me", "bob", false, nil)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	require.NotEmpty(t, a.header.Get("Retry-After"))
	allow()
	ws, err = r.rs.WaitStateOf(ctx, saleID, "bob")
	require.NoError(t, err)
	require.True(t, ws.Waiting, "a leave refused leaves nothing half done")
	for range 5 {
		if a = r.do(t, "DELETE", path+"/me", "bob", false, nil); a.status != http.StatusServiceUnavailable {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, http.StatusNoContent, a.status, "%v", a.body)
	got = rows()
	require.Len(t, got, 1, "leaving is final")
	require.Equal(t, "cat", got[0].UserID)
}
