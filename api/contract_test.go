package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
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
	for _, rt := range srv.App().GetRoutes() {
		if rt.Method == "GET" && rt.Path != "/" && !slices.Contains(servedRoutes(srv), "GET "+rt.Path) {
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
