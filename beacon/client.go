package beacon

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNotYet is Fetch's answer for a round that does not exist yet: its
// time has not come on the local clock, or every beacon said so. A draw
// waits and asks again; any other error is a beacon fault.
var ErrNotYet = errors.New("the beacon round is not published yet")

// errNotPublished is one URL's answer that it has not the round (drand
// answers 404 for a round in the future; 425 is accepted as meaning the same).
var errNotPublished = errors.New("the round is not published there")

// maxAnswer bounds what Fetch reads of one answer: a round is ~250 bytes,
// and a misbehaving relay must not make the draw read without end.
const maxAnswer = 64 << 10

// Round is a verified beacon round.
type Round struct {
	Number    uint64
	Signature []byte
}

// Randomness is the round's randomness, SHA-256 of its signature.
func (r Round) Randomness() [32]byte { return Randomness(r.Signature) }

// Client reads rounds over drand's HTTP API from several base URLs, tried
// in turn, so one relay down or lying does not stop a draw: every answer is
// verified against the chain's pinned key, never trusted.
type Client struct {
	urls []string
	hc   *http.Client
}

// NewClient reads from urls (base URLs, as ParseURLs returns them) with hc;
// a nil hc is a client with a 10 s timeout, so one hung relay cannot hold
// the draw.
func NewClient(urls []string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	c := &Client{hc: hc}
	for _, u := range urls {
		// A trailing slash would double the one before the chain hash,
		// which some relays answer 404 ("not yet") to.
		c.urls = append(c.urls, strings.TrimRight(u, "/"))
	}
	return c
}

// Fetch returns round of chain, verified with chain.Verify against the
// chain's pinned key. It asks each URL in turn (GET
// {url}/{chain.Hash}/public/{round}) until one answers a round that
// verifies; an answer that is not JSON, names another round, or whose
// signature does not verify is never returned, and its fault is part of
// the error. The error wraps ErrNotYet when the round's time has not come
// on the local clock (no URL is asked) or when every URL answered that it
// has not the round; otherwise it names each URL's fault (errors.Join).
func (c *Client) Fetch(ctx context.Context, chain Chain, round uint64) (Round, error) {
	if round == 0 {
		return Round{}, errors.New("round 0 does not exist (rounds start at 1)")
	}
	if at := chain.RoundTime(round); time.Now().Before(at) {
		return Round{}, fmt.Errorf("round %d of chain %s is due at %s: %w", round, chain.Hash, at.Format(time.RFC3339), ErrNotYet)
	}
	if len(c.urls) == 0 {
		return Round{}, errors.New("no beacon URL to fetch from")
	}
	var faults []error
	notYet := 0
	for _, u := range c.urls {
		r, err := c.fetchFrom(ctx, u, chain, round)
		if err == nil {
			return r, nil
		}
		if errors.Is(err, errNotPublished) {
			notYet++
		}
		faults = append(faults, fmt.Errorf("%s: %w", u, err))
		if ctx.Err() != nil {
			break
		}
	}
	all := errors.Join(faults...)
	if notYet == len(c.urls) {
		return Round{}, fmt.Errorf("round %d of chain %s: %w: %w", round, chain.Hash, ErrNotYet, all)
	}
	return Round{}, fmt.Errorf("round %d of chain %s: no beacon answered a round that verifies: %w", round, chain.Hash, all)
}

// fetchFrom asks one base URL for round and checks its answer.
func (c *Client) fetchFrom(ctx context.Context, base string, chain Chain, round uint64) (Round, error) {
	body, err := c.get(ctx, base+"/"+chain.Hash+"/public/"+strconv.FormatUint(round, 10))
	if err != nil {
		return Round{}, err
	}
	return checkAnswer(body, chain, round)
}

// get returns the body of a 200 answer; 404 and 425 are errNotPublished.
func (c *Client) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound, http.StatusTooEarly:
		return nil, fmt.Errorf("answered %s: %w", resp.Status, errNotPublished)
	default:
		return nil, fmt.Errorf("answered %s: %.200q", resp.Status, body)
	}
}

// checkAnswer decodes one answer and checks it is round, signed with the
// chain's key: a relay is trusted for nothing.
func checkAnswer(body []byte, chain Chain, round uint64) (Round, error) {
	var a roundJSON
	if err := json.Unmarshal(body, &a); err != nil {
		return Round{}, fmt.Errorf("answer is not a round in JSON: %w", err)
	}
	if a.Round != round {
		return Round{}, fmt.Errorf("answered round %d, not %d", a.Round, round)
	}
	sig, err := hex.DecodeString(a.Signature)
	if err != nil {
		return Round{}, fmt.Errorf("signature is not hex: %w", err)
	}
	if err := chain.Verify(round, sig); err != nil {
		return Round{}, fmt.Errorf("verify round %d: %w", round, err)
	}
	if err := checkRandomness(a.Randomness, sig); err != nil {
		return Round{}, err
	}
	return Round{Number: round, Signature: sig}, nil
}

// checkRandomness refuses an answer whose randomness is not SHA-256 of its
// signature: the draw computes its own, but a relay that lies about it is
// faulty. drand's v2 API omits the field, so an empty one is no fault.
func checkRandomness(field string, sig []byte) error {
	if field == "" {
		return nil
	}
	got, err := hex.DecodeString(field)
	want := Randomness(sig)
	if err != nil || !bytes.Equal(got, want[:]) {
		return fmt.Errorf("randomness %.80q is not SHA-256 of the signature", field)
	}
	return nil
}
