package api_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/api/contract"
)

// The document describes every route the API serves, and serves no other
// (docs/API.md "The contract, machine-readable"): a route added to Fiber
// without its path in api/openapi.yaml, or a path left in it after its
// route was removed, fails here.
func TestContract_TheDocumentHoldsEveryRouteAndNoOther(t *testing.T) {
	r := newHandlerRig(t, api.Config{Dev: api.DevTools{SignIn: true, Checkout: true}})
	served := servedRoutes(r.srv)
	documented, mounts := documentedRoutes(t, api.OpenAPI)

	require.Empty(t, routeDrift(served, documented), "routes served and documented differ")
	for _, m := range mounts {
		require.Contains(t, mountedPrefixes(r.srv), m, "the document's x-fiber-mount path %s is not mounted", m)
	}
}

// The drift check itself: a route the document lacks, and a path the
// server lacks, are both reported.
func TestContract_RouteDriftIsReportedBothWays(t *testing.T) {
	served := []string{"GET /api/v1/sales", "POST /api/v1/sales/{id}/claims"}
	documented := []string{"GET /api/v1/sales", "GET /api/v1/orders"}
	require.Equal(t, []string{
		"GET /api/v1/orders: in the document, not served",
		"POST /api/v1/sales/{id}/claims: served, not in the document",
	}, routeDrift(served, documented))
}

// GET /api/v1/openapi.json serves the document as it is in the
// repository, answered as the document itself describes.
func TestContract_TheDocumentIsServedAsJSON(t *testing.T) {
	r := newHandlerRig(t, api.Config{})
	resp := contract.Test(t, r.srv.App(), httptest.NewRequest("GET", "/api/v1/openapi.json", nil))
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	want, err := yaml.YAMLToJSON(api.OpenAPI)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}

// Every problem code the server can answer (the Code constants of
// errors.go) is one some operation of the document lists, the document
// lists no other, and every code docs/API.md's prose gives to a status
// ("409 `SOLD_OUT`") or names in backticks is one of them.
func TestContract_EveryCodeIsTheServersAndTheProsesAndTheDocuments(t *testing.T) {
	server := serverCodes(t, "../errors.go")
	documented := documentedCodes(t, api.OpenAPI)
	prose, err := os.ReadFile("../docs/API.md")
	require.NoError(t, err)

	require.Empty(t, missing(server, documented), "codes the server can answer that no operation of api/openapi.yaml lists")
	require.Empty(t, missing(documented, server), "codes api/openapi.yaml lists that the server never answers")
	var named []string
	for _, m := range regexp.MustCompile("[1-5][0-9][0-9] `([A-Z][A-Z_]+)`").FindAllStringSubmatch(string(prose), -1) {
		named = append(named, m[1])
	}
	for _, m := range regexp.MustCompile("`([A-Z][A-Z_]+)`").FindAllStringSubmatch(string(prose), -1) {
		if slices.Contains(server, m[1]) {
			named = append(named, m[1])
		}
	}
	require.NotEmpty(t, named)
	require.Empty(t, missing(named, documented), "codes docs/API.md gives that api/openapi.yaml does not list")
}

// The codes check finds a code on either side only.
func TestContract_ACodeMissingFromEitherSideIsFound(t *testing.T) {
	require.Equal(t, []string{"SOLD_OUT"}, missing([]string{"SOLD_OUT", "SALE_ENDED"}, []string{"SALE_ENDED"}))
	doc := []byte("paths:\n  /x:\n    get:\n      responses:\n        '409':\n          content:\n            application/problem+json:\n              schema:\n                properties:\n                  code:\n                    enum: [SOLD_OUT, NOPE]\n")
	require.Equal(t, []string{"NOPE", "SOLD_OUT"}, documentedCodes(t, doc))
}

// serverCodes are the values of the Code constants declared in file.
func serverCodes(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		v, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
			return true
		}
		for _, val := range v.Values {
			lit, ok := val.(*ast.BasicLit)
			require.True(t, ok)
			code, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			out = append(out, code)
		}
		return true
	})
	require.NotEmpty(t, out)
	slices.Sort(out)
	return out
}

// documentedCodes are the values of every enum of a property named code
// in the document.
func documentedCodes(t *testing.T, doc []byte) []string {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	require.NoError(t, err)
	var d any
	require.NoError(t, json.Unmarshal(j, &d))
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				if code, ok := props["code"].(map[string]any); ok {
					for _, e := range asList(code["enum"]) {
						out = append(out, e.(string))
					}
					if c, ok := code["const"].(string); ok {
						out = append(out, c)
					}
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(d)
	slices.Sort(out)
	return slices.Compact(out)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// missing are the elements of want not in have, each once, sorted.
func missing(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// servedRoutes are the server's routes as "METHOD /path/{param}", HEAD
// (Fiber's twin of every GET) and middleware left out.
func servedRoutes(srv *api.Server) []string {
	var out []string
	for _, rt := range srv.App().GetRoutes(true) {
		if rt.Method == "HEAD" {
			continue
		}
		parts := strings.Split(rt.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + strings.TrimSuffix(p[1:], "?") + "}"
			}
		}
		out = append(out, rt.Method+" "+strings.Join(parts, "/"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mountedPrefixes are the paths handlers are mounted on with Use (the
// embedded pages' assets): the GET routes GetRoutes lists only unfiltered.
func mountedPrefixes(srv *api.Server) []string {
	var out []string
	served := servedRoutes(srv)
	for _, rt := range srv.App().GetRoutes() {
		if rt.Method == "GET" && rt.Path != "/" && !slices.Contains(served, "GET "+rt.Path) {
			out = append(out, rt.Path)
		}
	}
	return out
}

// documentedRoutes are the document's operations as "METHOD /path", and
// the prefixes of the paths it marks as mounted (x-fiber-mount: use:
// /assets/{file} is served under the USE route /assets).
func documentedRoutes(t *testing.T, doc []byte) (routes, mounts []string) {
	t.Helper()
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	j, err := yaml.YAMLToJSON(doc)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &d))
	for path, item := range d.Paths {
		if raw, ok := item["x-fiber-mount"]; ok {
			var how string
			require.NoError(t, json.Unmarshal(raw, &how))
			require.Equal(t, "use", how, "x-fiber-mount of %s", path)
			mounts = append(mounts, path[:strings.Index(path, "/{")])
			continue
		}
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "options", "head", "trace":
				routes = append(routes, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(routes)
	return routes, mounts
}

// routeDrift lists each route on one side only.
func routeDrift(served, documented []string) []string {
	var out []string
	for _, r := range served {
		if !slices.Contains(documented, r) {
			out = append(out, fmt.Sprintf("%s: served, not in the document", r))
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			out = append(out, fmt.Sprintf("%s: in the document, not served", r))
		}
	}
	slices.Sort(out)
	return out
}
