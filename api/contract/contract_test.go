package contract_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api/contract"
)

const accepted = `{"order_id":"42","sale_id":"7","sku":"default","quantity":1,"status":"QUEUED","amount_cents":990,"currency":"usd","pay_by":"2026-11-28T10:00:00Z"}`

func claim(id string) *http.Request {
	req := httptest.NewRequest("POST", "/api/v1/sales/"+id+"/claims", nil)
	req.Header.Set("Authorization", "Bearer x")
	return req
}

func answer(status int, ctype, body string, headers ...string) *http.Response {
	h := http.Header{"Content-Type": {ctype}}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

// An answer as the document describes it passes, and its body can be read
// again afterwards.
func TestCheck_AnAnswerTheDocumentDescribesPasses(t *testing.T) {
	resp := answer(202, "application/json", accepted, "Location", "/api/v1/orders/42")
	require.Empty(t, contract.Check(claim("7"), resp))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.JSONEq(t, accepted, string(b))
}

// Each drift the contract exists to catch fails the check.
func TestCheck_EachDriftFails(t *testing.T) {
	for name, c := range map[string]struct {
		req  *http.Request
		resp *http.Response
		want string
	}{
		"a field missing":                                 {claim("7"), answer(202, "application/json", strings.Replace(accepted, `"sku":"default",`, "", 1), "Location", "/api/v1/orders/42"), "sku"},
		"a field renamed":                                 {claim("7"), answer(202, "application/json", strings.Replace(accepted, `"pay_by"`, `"payBy"`, 1), "Location", "/api/v1/orders/42"), "payBy"},
		"an id sent as a number":                          {claim("7"), answer(202, "application/json", strings.Replace(accepted, `"order_id":"42"`, `"order_id":42`, 1), "Location", "/api/v1/orders/42"), "order_id"},
		"a header missing":                                {claim("7"), answer(202, "application/json", accepted), "Location"},
		"a status the operation does not list":            {claim("7"), answer(418, "application/problem+json", `{"type":"t","title":"t","status":418,"detail":"d","code":"SOLD_OUT"}`), "418"},
		"a code the operation does not list":              {claim("7"), answer(409, "application/problem+json", `{"type":"urn:seckill:problem:NOPE","title":"Conflict","status":409,"detail":"d","code":"NOPE"}`), "code"},
		"a problem without its code":                      {claim("7"), answer(409, "application/problem+json", `{"type":"urn:seckill:problem:SOLD_OUT","title":"Conflict","status":409,"detail":"d"}`), "code"},
		"a path the document does not hold, answered 200": {httptest.NewRequest("GET", "/api/v1/nowhere", nil), answer(200, "application/json", `{}`), "no such path"},
		"a request the document refuses, answered 202":    {claim("007"), answer(202, "application/json", accepted, "Location", "/api/v1/orders/42"), "4xx"},
	} {
		t.Run(name, func(t *testing.T) {
			got := contract.Check(c.req, c.resp)
			require.NotEmpty(t, got)
			require.Contains(t, got, c.want)
		})
	}
}

// Tests of bad input stay possible: a request the document refuses may be
// answered with the problem its operation lists, and a path it does not
// hold with a 404 problem.
func TestCheck_BadInputAnsweredWithAListedProblemPasses(t *testing.T) {
	notFound := `{"type":"urn:seckill:problem:SALE_NOT_FOUND","title":"Not Found","status":404,"detail":"no such sale","code":"SALE_NOT_FOUND"}`
	require.Empty(t, contract.Check(claim("007"), answer(404, "application/problem+json", notFound)))
	require.Empty(t, contract.Check(httptest.NewRequest("GET", "/api/v1/nowhere", nil),
		answer(404, "application/problem+json", `{"type":"urn:seckill:problem:NOT_FOUND","title":"Not Found","status":404,"detail":"no such resource","code":"NOT_FOUND"}`)))
}

const paidOrder = `{"order_id":"42","sale_id":"7","user_id":"ann","sku":"default","quantity":1,"status":"PAID","close_reason":null,"amount_cents":990,"currency":"usd","pay_by":"2026-11-28T10:00:00Z","created_at":"2026-11-28T09:58:00Z","paid_at":"2026-11-28T09:59:00Z","closed_at":null,"refund":null}`

func event(typ, order string) (http.Header, []byte) {
	h := http.Header{}
	h.Set("webhook-id", "evt_42_"+strings.TrimPrefix(typ, "order."))
	h.Set("webhook-timestamp", "1795860000")
	h.Set("webhook-signature", "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=")
	return h, []byte(`{"type":"` + typ + `","timestamp":"2026-11-28T09:59:00Z","data":` + order + `}`)
}

// An order event as the document's webhooks describe it passes; one of
// another type, with a wrong header, or whose order is not the event's,
// fails.
func TestCheckEvent_TheWebhooksAreTheDocuments(t *testing.T) {
	require.Empty(t, contract.CheckEvent(event("order.paid", paidOrder)))

	h, body := event("order.shipped", paidOrder)
	require.Contains(t, contract.CheckEvent(h, body), "not one of the document's webhooks")
	h, body = event("order.paid", paidOrder)
	h.Set("webhook-id", "42")
	require.NotEmpty(t, contract.CheckEvent(h, body), "a webhook-id not of the contract's form")
	require.NotEmpty(t, contract.CheckEvent(event("order.paid", strings.Replace(paidOrder, `"PAID"`, `"QUEUED"`, 1))),
		"order.paid carrying an order not PAID")
	require.NotEmpty(t, contract.CheckEvent(event("order.paid", strings.Replace(paidOrder, `"order_id":"42"`, `"order_id":42`, 1))),
		"an id as a number")
	withPayment := strings.Replace(paidOrder, `"refund":null`, `"refund":null,"payment":{"provider":"stripe","payment_intent_id":"pi_1"}`, 1)
	require.Empty(t, contract.CheckEvent(event("order.paid", withPayment)), "a Stripe order's payment")
	require.NotEmpty(t, contract.CheckEvent(event("order.paid", strings.Replace(withPayment, `"pi_1"`, `"pi_1","client_secret":"pi_1_secret"`, 1))),
		"the buyer's client_secret sent to the shop")
}

// A payload checked against a named schema: an order stream's status
// events are Orders.
func TestCheckSchema_AnOrderAndNot(t *testing.T) {
	require.Empty(t, contract.CheckSchema("Order", []byte(paidOrder)))
	require.NotEmpty(t, contract.CheckSchema("Order", []byte(strings.Replace(paidOrder, `"sale_id":"7",`, "", 1))))
	require.Contains(t, contract.CheckSchema("Nope", []byte(paidOrder)), "no schema Nope")
}
