package beacon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Server serves a Signer's chain over drand's HTTP API v1, so the code that
// reads quicknet reads `seckill dev`'s beacon unchanged:
//
//	GET /{chain_hash}/info            the chain's info
//	GET /{chain_hash}/public/{round}  a round whose time has come
//	GET /{chain_hash}/public/latest   the latest round
//	GET /public/latest                the same, drand's default chain
//
// A round is served only once its time (Chain.RoundTime) has passed on Now,
// as a real beacon cannot sign ahead. Unknown chain hashes and other paths
// answer 404.
type Server struct {
	// Now is the server's clock; nil is time.Now. Set it before serving.
	Now func() time.Time

	signer *Signer
	chain  Chain
	down   atomic.Bool
	mux    *http.ServeMux
}

// NewServer serves s's chain.
func NewServer(s *Signer) *Server {
	srv := &Server{signer: s, chain: s.Chain()}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{hash}/info", srv.info)
	mux.HandleFunc("GET /{hash}/public/latest", srv.latest)
	mux.HandleFunc("GET /{hash}/public/{round}", srv.round)
	mux.HandleFunc("GET /public/latest", srv.latest)
	srv.mux = mux
	return srv
}

// SetDown makes every request answer 503 while down is true: a beacon that
// is unreachable, then back, as the draw's retry must survive.
func (srv *Server) SetDown(down bool) { srv.down.Store(down) }

// ServeHTTP answers drand's HTTP API, or 503 while the server is down.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if srv.down.Load() {
		http.Error(w, "beacon down", http.StatusServiceUnavailable)
		return
	}
	srv.mux.ServeHTTP(w, r)
}

func (srv *Server) now() time.Time {
	if srv.Now != nil {
		return srv.Now()
	}
	return time.Now()
}

// knownChain answers 404 for a chain this server does not sign, and says
// whether the request may go on. /public/latest has no hash: drand's
// default chain, which is this server's only one.
func (srv *Server) knownChain(w http.ResponseWriter, r *http.Request) bool {
	if h := r.PathValue("hash"); h != "" && h != srv.chain.Hash {
		http.Error(w, "unknown chain hash", http.StatusNotFound)
		return false
	}
	return true
}

func (srv *Server) info(w http.ResponseWriter, r *http.Request) {
	if !srv.knownChain(w, r) {
		return
	}
	c := srv.chain
	// A development chain has no group file; its groupHash is SHA-256 of
	// its public key, so the field drand clients expect is present.
	group := sha256.Sum256(c.PublicKey)
	writeJSON(w, infoJSON{
		PublicKey:   hex.EncodeToString(c.PublicKey),
		Period:      int64(c.Period / time.Second),
		GenesisTime: c.Genesis.Unix(),
		Hash:        c.Hash,
		GroupHash:   hex.EncodeToString(group[:]),
		SchemeID:    c.Scheme,
		Metadata:    infoMetadata{BeaconID: devBeaconID},
	})
}

func (srv *Server) latest(w http.ResponseWriter, r *http.Request) {
	if !srv.knownChain(w, r) {
		return
	}
	n, ok := latestRound(srv.chain, srv.now())
	if !ok {
		http.Error(w, "no round published before genesis", http.StatusNotFound)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	srv.writeRound(w, n)
}

// round serves one round. A round whose time has not come answers 404, as
// drand's HTTP server does (drand/drand handler/http/server.go, PublicRand:
// "request in the future" -> http.StatusNotFound, with a Cache-Control
// max-age until the round's time), rather than 425. Round 0 is the latest
// round and a malformed round 400, as there too.
func (srv *Server) round(w http.ResponseWriter, r *http.Request) {
	if !srv.knownChain(w, r) {
		return
	}
	n, err := strconv.ParseUint(r.PathValue("round"), 10, 64)
	if err != nil {
		http.Error(w, "malformed round", http.StatusBadRequest)
		return
	}
	if n == 0 {
		srv.latest(w, r)
		return
	}
	now := srv.now()
	if at := srv.chain.RoundTime(n); at.After(now) {
		wait := int(at.Sub(now).Seconds())
		w.Header().Set("Cache-Control", fmt.Sprintf("public, must-revalidate, max-age=%d", wait))
		http.Error(w, "round not published yet", http.StatusNotFound)
		return
	}
	// A published round never changes: cached as drand caches it.
	w.Header().Set("Cache-Control", "public, max-age=604800, immutable")
	srv.writeRound(w, n)
}

func (srv *Server) writeRound(w http.ResponseWriter, n uint64) {
	sig := srv.signer.Sign(n)
	rnd := Randomness(sig)
	writeJSON(w, roundJSON{
		Round:      n,
		Randomness: hex.EncodeToString(rnd[:]),
		Signature:  hex.EncodeToString(sig),
	})
}

// latestRound is the last round of c published at or before now, false
// before genesis.
func latestRound(c Chain, now time.Time) (uint64, bool) {
	if now.Before(c.Genesis) {
		return 0, false
	}
	return uint64(now.Sub(c.Genesis)/c.Period) + 1, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// The values are plain structs of strings and numbers: encoding cannot
	// fail, and a write error means the client is gone.
	_ = json.NewEncoder(w).Encode(v)
}
