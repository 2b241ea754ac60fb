// Package shopevents sends order events to the shop (docs/API.md "Order
// events to the shop"): one POST per event to SECKILL_EVENTS_URL, signed as
// Standard Webhooks specifies (webhook-id, webhook-timestamp,
// webhook-signature) with the standard-webhooks library. It only sends;
// what is sent when, in order and retried for days, is the ShopEvents
// workflow's job (workflows/), which calls Send from an activity.
package shopevents

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/seckill/seckill"
)

// SecretPrefix starts a Standard Webhooks signing key.
const SecretPrefix = "whsec_"

// Sender posts signed events to one URL.
type Sender struct {
	url  string
	wh   *standardwebhooks.Webhook
	http *http.Client
	now  func() time.Time
}

// New returns a Sender to rawURL (http or https) signing with secret, a
// key in the whsec_<base64> form; client nil gives one with a 10 s timeout.
func New(rawURL, secret string, client *http.Client) (*Sender, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	key, err := ParseSecret(secret)
	if err != nil {
		return nil, err
	}
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		return nil, err
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	// A redirect is not a delivery: Go would follow a 301/302 with a GET
	// without the body and take its 2xx for success. The 3xx is returned
	// as it is, a refusal the workflow retries (and the operator fixes the
	// URL).
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &c
	return &Sender{url: rawURL, wh: wh, http: client, now: time.Now}, nil
}

// CheckURL accepts an absolute http(s) URL.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SECKILL_EVENTS_URL must be an http(s) URL, got %q", rawURL)
	}
	return nil
}

// ParseSecret reads a whsec_<base64> key (at least 24 bytes once decoded,
// as Standard Webhooks recommends).
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, errors.New("SECKILL_EVENTS_SECRET must be a Standard Webhooks key: whsec_ and base64 (e.g. whsec_$(openssl rand -base64 32))")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_EVENTS_SECRET: the part after whsec_ is not base64: %w", err)
	}
	if len(key) < 24 {
		return nil, fmt.Errorf("SECKILL_EVENTS_SECRET: the key is %d bytes; use at least 24 (openssl rand -base64 32)", len(key))
	}
	return key, nil
}

// RefusedError is the receiver's answer other than 2xx.
type RefusedError struct {
	Status int
	Body   string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the shop answered %d: %s", e.Status, e.Body)
}

// Send posts ev, signed now. It returns nil only for a 2xx answer; a
// redirect is not followed.
func (s *Sender) Send(ctx context.Context, ev seckill.ShopEvent) error {
	body, err := ev.Body()
	if err != nil {
		return err
	}
	now := s.now()
	sig, err := s.wh.Sign(ev.ID, now, body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seckill")
	req.Header.Set(standardwebhooks.HeaderWebhookID, ev.ID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("send %s to the shop: %w", ev.ID, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &RefusedError{Status: resp.StatusCode, Body: strings.TrimSpace(string(answer))}
	}
	return nil
}
