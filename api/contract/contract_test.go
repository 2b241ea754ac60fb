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
