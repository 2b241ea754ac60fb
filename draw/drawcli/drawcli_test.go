package drawcli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/draw/drawcli"
	"github.com/seckill/seckill/internal/cli"
)

const adminToken = "admin-token"

// fakeAPI serves one sale's published draw as docs/API.md "Fair start"
// says the API does.
type fakeAPI struct {
	saleID     string
	seed       []byte
	commitment string // the sale's (and the draw's) commitment
	stock      int64
	entries    [][]byte // sorted ascending
	// items, when set, is what an entry's line lists after it (else
	// "default 1"): a tampered list.
	items  map[string]string
	orders []map[string]any
	// tamper, when set, changes the draw's JSON before it is served.
	tamper   func(d map[string]any)
	endsAt   time.Time // the sale's ends_at (zero: an hour from now)
	sold     int64     // the sale's stock.sold
	drawCode string    // when set, /draw answers 409 with this code
	// entriesServed, ordersAuth record what was asked.
	ordersAuth string
}

// newFakeAPI draws n entries for stock units and admits ranks 1..K.
func newFakeAPI(n int, stock int64) *fakeAPI {
	f := &fakeAPI{saleID: "42", seed: draw.NewSeed(), stock: stock}
	f.commitment = draw.Commitment(f.seed)
	f.entries = make([][]byte, n)
	for i := range f.entries {
		f.entries[i] = draw.NewEntry()
	}
	slices.SortFunc(f.entries, bytes.Compare)
	ranked := draw.Rank(f.seed, f.entries)
	for i := range min(int(stock), n) {
		f.orders = append(f.orders, map[string]any{
			"order_id": strconv.FormatInt(7_200_000_000_000_000_000+int64(i)*4096, 10),
			"entry":    hex.EncodeToString(ranked[i].Entry),
			"rank":     ranked[i].Rank,
			"sku":      "default", "quantity": 1,
		})
	}
	return f
}

func problem(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "detail": detail})
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base := "/api/v1/sales/" + f.saleID
	switch r.URL.Path {
	case base:
		endsAt := f.endsAt
		if endsAt.IsZero() {
			endsAt = time.Now().Add(time.Hour)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": f.saleID, "state": "ACTIVE", "ends_at": endsAt.UTC().Format(time.RFC3339),
			"stock":    map[string]any{"total": f.stock, "remaining": 0, "sold": f.sold},
			"variants": []any{map[string]any{"sku": "default", "stock": map[string]any{"total": f.stock, "remaining": 0, "sold": f.sold}}},
			"draw":     map[string]any{"commitment": f.commitment},
		})
	case base + "/draw":
		if f.drawCode != "" {
			problem(w, http.StatusConflict, f.drawCode, "not now")
			return
		}
		d := map[string]any{
			"commitment": f.commitment, "seed": hex.EncodeToString(f.seed),
			"entries": len(f.entries), "admitted": min(int(f.stock), len(f.entries)),
			"variants": []any{map[string]any{"sku": "default", "stock": f.stock, "admitted": min(int(f.stock), len(f.entries))}},
		}
		if f.tamper != nil {
			f.tamper(d)
		}
		_ = json.NewEncoder(w).Encode(d)
	case base + "/draw/entries":
		w.Header().Set("Content-Type", "text/plain")
		bw := bufio.NewWriterSize(w, 64<<10)
		line := make([]byte, 0, 64)
		for _, e := range f.entries {
			item := "default 1"
			if it, ok := f.items[hex.EncodeToString(e)]; ok {
				item = it
			}
			line = append(hex.AppendEncode(line[:0], e), ' ')
			line = append(append(line, item...), '\n')
			_, _ = bw.Write(line)
		}
		_ = bw.Flush()
	case base + "/draw/orders":
		f.ordersAuth = r.Header.Get("Authorization")
		if f.ordersAuth != "Bearer "+adminToken {
			problem(w, http.StatusUnauthorized, "UNAUTHENTICATED", "a bearer token is required")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"orders": f.orders})
	default:
		problem(w, http.StatusNotFound, "SALE_NOT_FOUND", "no such sale")
	}
}

// run runs `seckill draw args...` against f.
func run(t *testing.T, f *fakeAPI, token string, args ...string) (string, error) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	err := drawcli.Command(context.Background(), args, &out, drawcli.Options{
		DefaultAPI: srv.URL,
		AdminToken: func() (string, error) { return token, nil },
	})
	return out.String(), err
}

func TestDrawVerify_Good(t *testing.T) {
	f := newFakeAPI(200, 20)
	out, err := run(t, f, adminToken, "verify", "--sale", "42")
	require.NoError(t, err, out)
	require.Equal(t, "Bearer "+adminToken, f.ordersAuth)
	require.Contains(t, out, "draw of sale 42: 200 entries, stock 20, so 20 admitted (default: 20 of 200 entries for stock 20); 20 orders listed\n")
	require.Contains(t, out, "  ok   "+draw.CheckEachRank+"\n")
	require.NotContains(t, out, "FAIL")
	require.Contains(t, out, "the draw checks out")
	t.Logf("\n%s", out)

	// --json, and --api given explicitly (after the trailing slash).
	srv := httptest.NewServer(f)
	defer srv.Close()
	var buf bytes.Buffer
	err = drawcli.Command(context.Background(), []string{"verify", "--sale", "42", "--api", srv.URL + "/", "--json"}, &buf,
		drawcli.Options{DefaultAPI: "http://127.0.0.1:1", AdminToken: func() (string, error) { return adminToken, nil }})
	require.NoError(t, err)
	var rep draw.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rep), buf.String())
	require.True(t, rep.OK())
	require.Equal(t, int64(20), rep.Admitted)
	require.Len(t, rep.Checks, 16)
}

func TestDrawVerify_Tampered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(f *fakeAPI)
		failed string
		want   string
	}{
		{"seed", func(f *fakeAPI) {
			f.tamper = func(d map[string]any) { d["seed"] = hex.EncodeToString(draw.NewSeed()) }
		}, draw.CheckCommitment, "but the commitment published is"},
		{"entry dropped", func(f *fakeAPI) {
			f.entries = slices.Delete(f.entries, 3, 4)
			f.tamper = func(d map[string]any) { d["entries"] = 50 }
		}, draw.CheckCount, "declares 50 entries, but 49 were published"},
		{"entry duplicated", func(f *fakeAPI) {
			f.entries = slices.Insert(f.entries, 3, f.entries[3])
		}, draw.CheckDistinct, "is published 2 times"},
		{"an order listed twice", func(f *fakeAPI) {
			f.orders[1]["order_id"] = f.orders[0]["order_id"]
		}, draw.CheckIDs, "is listed twice"},
		{"rank K+1 instead of K", func(f *fakeAPI) {
			ranked := draw.Rank(f.seed, f.entries)
			f.orders[4]["entry"] = hex.EncodeToString(ranked[5].Entry)
		}, draw.CheckTopK, "has rank 6, not one of the K = 5 the draw admits"},
		{"an admitted entry's quantity changed", func(f *fakeAPI) {
			// Rank 1 asks for 2 of the 5 units: ranks 1..4 fit, rank 5's
			// order is no admission.
			f.items = map[string]string{hex.EncodeToString(draw.Rank(f.seed, f.entries)[0].Entry): "default 2"}
		}, draw.CheckItems, "but its entry"},
		{"an admitted entry's variant changed", func(f *fakeAPI) {
			f.items = map[string]string{hex.EncodeToString(draw.Rank(f.seed, f.entries)[0].Entry): "eu-42 1"}
		}, draw.CheckStock, `1 entries are for variant "eu-42", which the draw does not have`},
		{"admitted count", func(f *fakeAPI) {
			f.tamper = func(d map[string]any) { d["admitted"] = 6 }
		}, draw.CheckAdmitted, "declares 6 admitted"},
		{"commitment changed after the lobby opened", func(f *fakeAPI) {
			f.seed = draw.NewSeed() // a new seed and its commitment, the sale still showing the old one
			f.tamper = func(d map[string]any) { d["commitment"] = draw.Commitment(f.seed) }
		}, draw.CheckCommitment, "the sale showed commitment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(50, 5)
			tc.tamper(f)
			out, err := run(t, f, adminToken, "verify", "--sale", "42")
			require.ErrorIs(t, err, drawcli.ErrFailed, out)
			require.Contains(t, out, "  FAIL "+tc.failed+"\n", out)
			require.Contains(t, out, tc.want)
			require.Contains(t, out, "the draw does NOT check out")
		})
	}
}

// A draw the sale's end cut publishes the rank it cut at: verify holds it
// to the ranks before it, once the sale's ends_at has passed.
func TestDrawVerify_ADrawTheSalesEndCut(t *testing.T) {
	cut := func(f *fakeAPI) {
		f.orders = f.orders[:2]
		f.tamper = func(d map[string]any) {
			d["admitted"], d["ended_at_rank"] = 2, 3
			d["variants"] = []any{map[string]any{"sku": "default", "stock": f.stock, "admitted": 2}}
		}
	}
	f := newFakeAPI(50, 5)
	cut(f)
	f.endsAt = time.Now().Add(-time.Minute)
	out, err := run(t, f, adminToken, "verify", "--sale", "42")
	require.NoError(t, err, out)
	require.Contains(t, out, "so up to the sale's end, declared at rank 3, 2 admitted (default: 2 of 50 entries for stock 5); 2 orders listed\n")

	f = newFakeAPI(50, 5)
	cut(f) // ends_at an hour ahead
	out, err = run(t, f, adminToken, "verify", "--sale", "42")
	require.ErrorIs(t, err, drawcli.ErrFailed, out)
	require.Contains(t, out, "  FAIL "+draw.CheckEnded+"\n")

	// Ended, but the units refused at the cut were sold afterwards.
	f = newFakeAPI(50, 5)
	cut(f)
	f.endsAt, f.sold = time.Now().Add(-time.Minute), 5
	out, err = run(t, f, adminToken, "verify", "--sale", "42")
	require.ErrorIs(t, err, drawcli.ErrFailed, out)
	require.Contains(t, out, "orders hold 5 units (sold + locked), more than the 2 the entries before it asked for")
}

// TestDrawVerify_NoAdmin: without an admin token the public pieces are
// still checked; the order checks are skipped, and said so.
func TestDrawVerify_NoAdmin(t *testing.T) {
	f := newFakeAPI(30, 3)
	out, err := run(t, f, "someone-else", "verify", "--sale", "42")
	require.NoError(t, err, out)
	require.Contains(t, out, "  ok   "+draw.CheckCommitment+"\n")
	require.Contains(t, out, "  skip "+draw.CheckTopK+"\n")
	require.Contains(t, out, "401 UNAUTHENTICATED: a bearer token is required (the order list needs an admin token")

	srv := httptest.NewServer(f)
	defer srv.Close()
	var buf bytes.Buffer
	err = drawcli.Command(context.Background(), []string{"verify", "--sale", "42"}, &buf, drawcli.Options{
		DefaultAPI: srv.URL, AdminToken: func() (string, error) { return "", errors.New("SECKILL_ADMIN_TOKEN is required") },
	})
	require.NoError(t, err)
	require.Contains(t, buf.String(), "the order list was not read: no admin token: SECKILL_ADMIN_TOKEN is required")
}

func TestDrawVerify_Errors(t *testing.T) {
	f := newFakeAPI(5, 2)
	f.drawCode = "DRAW_IN_PROGRESS"
	_, err := run(t, f, adminToken, "verify", "--sale", "42")
	require.ErrorContains(t, err, "sale 42 has not drawn yet (409 DRAW_IN_PROGRESS: not now)")
	require.NotErrorIs(t, err, drawcli.ErrFailed)

	f.drawCode = "NO_LOBBY"
	_, err = run(t, f, adminToken, "verify", "--sale", "42")
	require.ErrorContains(t, err, "sale 42 has no lobby, so no draw")

	f.drawCode = ""
	_, err = run(t, f, adminToken, "verify", "--sale", "43")
	require.ErrorContains(t, err, "404 SALE_NOT_FOUND")

	_, err = run(t, f, adminToken, "verify")
	require.ErrorContains(t, err, "--sale must be a sale id")
	// A wrong command line exits 2 with the usage; the help exits 0 (cli.Exit).
	for _, args := range [][]string{{"verify", "--sale", "42", "extra"}, {"check"}, {}, {"verify", "--bogus"}} {
		_, err = run(t, f, adminToken, args...)
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, cli.Exit(err, &stdout, &stderr), "%q: %v", args, err)
		require.Contains(t, stderr.String(), "Usage:\n  seckill draw verify --sale ID", "%q", args)
	}
	_, err = run(t, f, adminToken, "verify", "--sale", "42", "extra")
	require.ErrorContains(t, err, "unexpected arguments")
	_, err = run(t, f, adminToken, "check")
	require.ErrorContains(t, err, `unknown subcommand "check"`)
	_, err = run(t, f, adminToken)
	require.ErrorContains(t, err, "a subcommand is required")
	for _, args := range [][]string{{"verify", "--help"}, {"--help"}, {"help"}, {"verify", "-h"}} {
		_, err = run(t, f, adminToken, args...)
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, cli.Exit(err, &stdout, &stderr), "%q: %v", args, err)
		require.Contains(t, stdout.String(), "Usage:\n  seckill draw verify --sale ID", "%q", args)
		require.Contains(t, stdout.String(), "  --api string\n        API base URL (default \"http://127.0.0.1:", "%q", args)
		require.Empty(t, stderr.String())
	}

	var buf bytes.Buffer
	err = drawcli.Command(context.Background(), []string{"verify", "--sale", "42", "--api", "http://127.0.0.1:1"}, &buf, drawcli.Options{})
	require.ErrorContains(t, err, "API not reachable at http://127.0.0.1:1")
}

// TestDrawVerify_MillionEntries: a million entries stream through with
// memory for their bytes, and a thousand admitted orders check out.
func TestDrawVerify_MillionEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("a million entries")
	}
	const n = 1_000_000
	f := &fakeAPI{saleID: "42", seed: draw.NewSeed(), stock: 1000}
	f.commitment = draw.Commitment(f.seed)
	f.entries = make([][]byte, n)
	backing := make([]byte, n*draw.EntrySize)
	for i := range f.entries {
		e := backing[i*draw.EntrySize : (i+1)*draw.EntrySize]
		binary.BigEndian.PutUint64(e[:8], uint64(i)<<20) // sorted, spread out
		copy(e[8:], draw.NewEntry()[:8])
		f.entries[i] = e
	}
	ranked := draw.Rank(f.seed, f.entries)
	for i := range 1000 {
		f.orders = append(f.orders, map[string]any{
			"order_id": strconv.Itoa(1_000_000 + i), "entry": hex.EncodeToString(ranked[i].Entry), "rank": i + 1, "sku": "default", "quantity": 1,
		})
	}
	out, err := run(t, f, adminToken, "verify", "--sale", "42")
	require.NoError(t, err, out)
	require.Contains(t, out, fmt.Sprintf("draw of sale 42: %d entries, stock 1000, so 1000 admitted", n))
	require.True(t, strings.HasSuffix(out, "the draw checks out: anyone can recompute these ranks from the seed and the entries\n"), out)
}
