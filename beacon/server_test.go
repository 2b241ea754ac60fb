package beacon_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
)

// servedRound is a round as the Server writes it (drand's v1 JSON).
type servedRound struct {
	Round      uint64 `json:"round"`
	Randomness string `json:"randomness"`
	Signature  string `json:"signature"`
}

// startBeacon serves signer's chain with its clock at round `at`'s time
// plus one second; 0 keeps the real clock.
func startBeacon(t *testing.T, signer *beacon.Signer, at uint64) (*beacon.Server, *httptest.Server) {
	t.Helper()
	srv := beacon.NewServer(signer)
	if at > 0 {
		now := signer.Chain().RoundTime(at).Add(time.Second)
		srv.Now = func() time.Time { return now }
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body json.RawMessage
	if resp.StatusCode == http.StatusOK {
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	}
	return resp.StatusCode, body
}

func getRound(t *testing.T, url string) servedRound {
	t.Helper()
	code, body := get(t, url)
	require.Equal(t, http.StatusOK, code, url)
	var r servedRound
	require.NoError(t, json.Unmarshal(body, &r))
	return r
}

// requireVerifiedRound checks a served round is round n of c, with its
// randomness SHA-256 of its signature.
func requireVerifiedRound(t *testing.T, c beacon.Chain, n uint64, r servedRound) {
	t.Helper()
	require.Equal(t, n, r.Round)
	sig, err := hex.DecodeString(r.Signature)
	require.NoError(t, err)
	require.NoError(t, c.Verify(n, sig))
	want := sha256.Sum256(sig)
	require.Equal(t, hex.EncodeToString(want[:]), r.Randomness)
}

func TestServer_InfoIsDrandsJSON(t *testing.T) {
	_, ts := startBeacon(t, beacon.DevSigner(), 0)
	code, body := get(t, ts.URL+"/"+beacon.Dev.Hash+"/info")
	require.Equal(t, http.StatusOK, code)
	var info map[string]any
	require.NoError(t, json.Unmarshal(body, &info))
	group := sha256.Sum256(beacon.Dev.PublicKey)
	require.Equal(t, map[string]any{
		"public_key":   hex.EncodeToString(beacon.Dev.PublicKey),
		"period":       float64(3),
		"genesis_time": float64(1692803367),
		"hash":         beacon.Dev.Hash,
		"groupHash":    hex.EncodeToString(group[:]),
		"schemeID":     "bls-unchained-g1-rfc9380",
		"metadata":     map[string]any{"beaconID": "seckill-dev"},
	}, info)
}

func TestServer_PublicRoundVerifies(t *testing.T) {
	_, ts := startBeacon(t, beacon.DevSigner(), 1000)
	for _, n := range []uint64{1, 999, 1000} {
		r := getRound(t, ts.URL+"/"+beacon.Dev.Hash+"/public/"+strconv.FormatUint(n, 10))
		requireVerifiedRound(t, beacon.Dev, n, r)
	}
}

func TestServer_LatestIsTheLastRoundWhoseTimeHasPassed(t *testing.T) {
	_, ts := startBeacon(t, beacon.DevSigner(), 1000)
	for _, path := range []string{"/" + beacon.Dev.Hash + "/public/latest", "/public/latest", "/" + beacon.Dev.Hash + "/public/0"} {
		requireVerifiedRound(t, beacon.Dev, 1000, getRound(t, ts.URL+path))
	}
}

func TestServer_LatestBeforeGenesisIsNotFound(t *testing.T) {
	srv, ts := startBeacon(t, beacon.DevSigner(), 0)
	srv.Now = func() time.Time { return beacon.Dev.Genesis.Add(-time.Second) }
	code, _ := get(t, ts.URL+"/public/latest")
	require.Equal(t, http.StatusNotFound, code)
}

// A round whose time has not come is refused with 404, as drand does.
func TestServer_AFutureRoundIsRefused(t *testing.T) {
	_, ts := startBeacon(t, beacon.DevSigner(), 1000)
	for _, n := range []string{"1001", "5000", "18446744073709551615"} {
		code, _ := get(t, ts.URL+"/"+beacon.Dev.Hash+"/public/"+n)
		require.Equal(t, http.StatusNotFound, code, n)
	}
}

func TestServer_UnknownChainsAndPathsAreNotFound(t *testing.T) {
	_, ts := startBeacon(t, beacon.DevSigner(), 1000)
	for _, path := range []string{
		"/" + beacon.Quicknet.Hash + "/info",
		"/" + beacon.Quicknet.Hash + "/public/1",
		"/" + beacon.Quicknet.Hash + "/public/latest",
		"/",
		"/" + beacon.Dev.Hash,
		"/" + beacon.Dev.Hash + "/public",
		"/" + beacon.Dev.Hash + "/public/1/extra",
		"/chains/" + beacon.Dev.Hash,
	} {
		code, _ := get(t, ts.URL+path)
		require.Equal(t, http.StatusNotFound, code, path)
	}
	code, _ := get(t, ts.URL+"/"+beacon.Dev.Hash+"/public/abc")
	require.Equal(t, http.StatusBadRequest, code, "a malformed round")
}

func TestServer_DownAnswers503ThenComesBack(t *testing.T) {
	srv, ts := startBeacon(t, beacon.DevSigner(), 1000)
	url := ts.URL + "/" + beacon.Dev.Hash + "/public/10"
	srv.SetDown(true)
	for _, u := range []string{url, ts.URL + "/public/latest", ts.URL + "/" + beacon.Dev.Hash + "/info", ts.URL + "/nowhere"} {
		code, _ := get(t, u)
		require.Equal(t, http.StatusServiceUnavailable, code, u)
	}
	srv.SetDown(false)
	requireVerifiedRound(t, beacon.Dev, 10, getRound(t, url))
}
