// Package contract checks HTTP exchanges against the contract, the
// OpenAPI 3.1 document api/openapi.yaml (api.OpenAPI), for the tests: the
// handler tests send through Test, the end-to-end tests through
// Transport, and an exchange the document does not describe fails the
// test that made it.
//
// The rule: every answer must be one the document gives for its
// operation (status, headers, body). A request the document accepts gets
// its answer checked as above; a request it refuses (a test of bad input:
// a malformed id, a field out of range) must be answered with a 4xx
// problem the operation lists; a path the document does not hold, 404.
//
// It uses pb33f/libopenapi-validator: it validates net/http requests and
// responses as they are, with OpenAPI 3.1's JSON Schema 2020-12 (ids as
// strings, nullable as type lists) and a strict mode that reports
// properties and headers the document does not declare, so a renamed or
// added field fails as a missing one does.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/seckill/seckill/api"
)

// freeForm are the paths whose bodies the document describes loosely,
// checked without the strict mode: the document itself (its schema names
// only openapi, info and paths; TestContract_TheDocumentIsServedAsJSON
// checks that answer byte for byte), and the payment webhook, whose body
// is the provider's event, with fields seckill neither reads nor controls.
var freeForm = map[string]bool{"/api/v1/openapi.json": true, "/api/v1/payments/webhook": true}

// ignoredHeaders are answered on every route when their feature is on,
// as the document's description says, rather than listed in each answer:
// the per-address limit's X-RateLimit-* and the W3C trace context.
var ignoredHeaders = []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Traceparent", "Tracestate"}

var (
	once    sync.Once
	checker validator.Validator
	lax     validator.Validator
	model   *v3.Document
	loadErr error
	// The validator's caches are not safe for every concurrent use; the
	// tests' exchanges are checked one at a time.
	mu sync.Mutex
)

// Validator is the contract's validator, built once per test binary.
func Validator() (validator.Validator, error) {
	once.Do(func() {
		doc, err := libopenapi.NewDocument(api.OpenAPI)
		if err != nil {
			loadErr = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		v, errs := validator.NewValidator(doc, config.WithStrictMode(), config.WithFormatAssertions(),
			config.WithStrictIgnoredHeadersExtra(ignoredHeaders...))
		if len(errs) > 0 {
			loadErr = fmt.Errorf("api/openapi.yaml: %v", errs)
			return
		}
		if lax, errs = validator.NewValidator(doc, config.WithFormatAssertions()); len(errs) > 0 {
			loadErr = fmt.Errorf("api/openapi.yaml: %v", errs)
			return
		}
		if ok, verrs := v.ValidateDocument(); !ok {
			loadErr = fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %s", describe(verrs))
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			loadErr = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		model = &m.Model
		checker = v
	})
	return checker, loadErr
}

// Test sends req to app as app.Test does (no timeout) and fails t when the
// exchange is not one the document describes. The answer's body can be
// read again.
func Test(t testing.TB, app *fiber.App, req *http.Request) *http.Response {
	t.Helper()
	body, err := readBody(req)
	if err != nil {
		t.Fatalf("read the request's body: %v", err)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	if msg := Check(withBody(req, body), resp); msg != "" {
		t.Errorf("%s", msg)
	}
	return resp
}

// Transport is a RoundTripper for the end-to-end tests' clients: it
// sends through base (nil: http.DefaultTransport) and reports every
// exchange the document does not describe to t (Errorf: the test fails
// at its end, whichever goroutine sent).
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
}

func (c *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/api/") {
		return resp, err // only the API's answers are the contract's
	}
	if msg := Check(withBody(req, body), resp); msg != "" {
		c.t.Errorf("%s", msg)
	}
	return resp, nil
}

// Check returns what is wrong with the exchange ("" when nothing is).
// resp's body is read and put back, except a stream's (text/event-stream),
// of which the status and headers are checked.
func Check(req *http.Request, resp *http.Response) string {
	v, err := Validator()
	if err != nil {
		return err.Error()
	}
	what := fmt.Sprintf("%s %s answered %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	checked := resp
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		head := *resp
		head.Body = http.NoBody
		checked = &head
	} else {
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return fmt.Sprintf("%s: read the answer: %v", what, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		copied := *resp
		copied.Body = io.NopCloser(bytes.NewReader(b))
		checked = &copied
		what += ": " + clip(b)
	}
	if freeForm[req.URL.Path] {
		v = lax
	}
	mu.Lock()
	defer mu.Unlock()
	if req.Method == http.MethodHead {
		return "" // Fiber answers HEAD for every GET; the document lists GETs
	}
	body := bodyOf(req)
	reqOK, reqErrs := v.ValidateHttpRequestSync(withBody(req, body))
	if !reqOK && unknownPath(reqErrs) {
		if resp.StatusCode == http.StatusNotFound && isProblem(resp) {
			return ""
		}
		return fmt.Sprintf("%s, but the document holds no such path or method (%s): only a 404 problem may answer it", what, describe(reqErrs))
	}
	respOK, respErrs := v.ValidateHttpResponse(withBody(req, body), checked)
	switch {
	case !respOK:
		return fmt.Sprintf("%s: an answer the document does not describe: %s", what, describe(respErrs))
	case !reqOK && (resp.StatusCode < 400 || resp.StatusCode >= 500):
		return fmt.Sprintf("%s, to a request the document refuses (%s): it must be answered with a 4xx problem", what, describe(reqErrs))
	}
	return ""
}

// CheckEvent returns what is wrong with an order event seckill sent to
// the shop ("" when nothing is): its type must be one of the document's
// webhooks, and its Standard Webhooks headers and body that webhook's.
func CheckEvent(header http.Header, body []byte) string {
	if _, err := Validator(); err != nil {
		return err.Error()
	}
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Sprintf("order event %s: not JSON: %v", clip(body), err)
	}
	item, ok := model.Webhooks.Get(ev.Type)
	if !ok {
		return fmt.Sprintf("order event of type %q: not one of the document's webhooks: %s", ev.Type, clip(body))
	}
	req, err := http.NewRequest(http.MethodPost, "/"+ev.Type, bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	mu.Lock()
	defer mu.Unlock()
	if ok, errs := checker.ValidateHttpRequestSyncWithPathItem(req, item, "/"+ev.Type); !ok {
		return fmt.Sprintf("order event %s: not what the document's webhook %s describes: %s", clip(body), ev.Type, describe(errs))
	}
	return ""
}

// CheckSchema returns what is wrong with payload as an instance of the
// document's schema name ("" when nothing is): how the tests check what
// no operation's answer carries whole, such as each event of an order's
// stream (GET /orders/{id}/events: x-sse-events).
func CheckSchema(name string, payload []byte) string {
	if _, err := Validator(); err != nil {
		return err.Error()
	}
	proxy, ok := model.Components.Schemas.Get(name)
	if !ok {
		return fmt.Sprintf("the document has no schema %s", name)
	}
	schema := proxy.Schema()
	if schema == nil {
		return fmt.Sprintf("schema %s: %v", name, proxy.GetBuildError())
	}
	mu.Lock()
	defer mu.Unlock()
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytesWithVersion(schema, payload, 3.1); !ok {
		return fmt.Sprintf("%s is not a %s: %s", clip(payload), name, describe(errs))
	}
	return ""
}

func unknownPath(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.IsPathMissingError() || e.IsOperationMissingError() {
			return true
		}
	}
	return false
}

func isProblem(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/problem+json"
}

// readBody reads req's body and puts it back (nil: none).
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}

// withBody is a copy of req whose body is body, readable again through
// GetBody (each validation reads it afresh).
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	if body == nil {
		r.Body = http.NoBody
	} else {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	r.ContentLength = int64(len(body))
	return r
}

func bodyOf(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(rc)
	return b
}

func describe(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		for _, se := range e.SchemaValidationErrors {
			s += fmt.Sprintf("; %s at %s", se.Reason, se.FieldPath)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
