//go:build !slim

package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// GET /api/v1/orders?sale_id=: a buyer who reloads the page finds their
// orders of the sale, newest first, from the moment of the 202.
func TestOrders_ListOfOneSale(t *testing.T) {
	s := startSystem(t, systemOptions{})
	sale := s.createSale(3, time.Minute)
	list := func(user string, admin bool, query string) (int, []seckill.OrderJSON, map[string]any) {
		t.Helper()
		r := s.mustDo("GET", "/api/v1/orders?"+query, s.token(user, admin), nil)
		if r.status != http.StatusOK {
			return r.status, nil, r.json(t)
		}
		var out []seckill.OrderJSON
		require.NoError(t, json.Unmarshal(r.body, &out), "%s", r.body)
		return r.status, out, nil
	}

	r := s.claim(sale, "ann")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	first := r.json(t)["order_id"].(string)
	status, orders, _ := list("ann", false, "sale_id="+sale)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, orders, 1, "found at once, QUEUED or already written")
	require.Equal(t, first, orders[0].OrderID)
	require.Contains(t, []seckill.OrderStatus{seckill.StatusQueued, seckill.StatusAwaitingPayment}, orders[0].Status)

	_, orders, _ = list("bob", false, "sale_id="+sale)
	require.NotNil(t, orders)
	require.Empty(t, orders, "bob sees none of ann's")

	// Ann cancels and claims again: both, newest first.
	s.waitOrder(first, "ann", seckill.StatusAwaitingPayment, 30*time.Second)
	c := s.mustDo("POST", "/api/v1/orders/"+first+"/cancel", s.token("ann", false), nil)
	require.Equal(t, http.StatusAccepted, c.status, "%s", c.body)
	s.waitOrder(first, "ann", seckill.StatusClosed, 30*time.Second)
	r = s.claim(sale, "ann")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	second := r.json(t)["order_id"].(string)
	_, orders, _ = list("ann", false, "sale_id="+sale)
	require.Len(t, orders, 2)
	require.Equal(t, second, orders[0].OrderID)
	require.Equal(t, first, orders[1].OrderID)
	require.Equal(t, seckill.StatusClosed, orders[1].Status)

	// An admin may ask for anyone's; a buyer only for their own.
	_, orders, _ = list("admin", true, "sale_id="+sale+"&user_id=ann")
	require.Len(t, orders, 2)
	status, _, problem := list("bob", false, "sale_id="+sale+"&user_id=ann")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, problem["detail"], "user_id")
	status, _, problem = list("ann", false, "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "INVALID_REQUEST", problem["code"])
	require.Contains(t, problem["detail"], "sale_id")
}
