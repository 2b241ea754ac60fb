package beacon

import (
	"fmt"
	"net/url"
	"strings"
)

// DefaultURLs are the League of Entropy's public HTTP relays, all serving
// quicknet over drand's v1 API. Source: drand's documentation, "Our HTTP
// API", https://docs.drand.love/developer/http-api (drand/drand-docs,
// docs/developer/06-HTTP-API.md). Relays are not trusted: every round is
// verified against the pinned key, so more of them only adds availability.
var DefaultURLs = []string{
	"https://api.drand.sh",
	"https://api2.drand.sh",
	"https://api3.drand.sh",
	"https://drand.cloudflare.com",
}

// ParseURLs reads SECKILL_BEACON_URLS: empty is DefaultURLs; "none" is no
// beacon (nil, nil: a sale is drawn from its secret seed alone, as in v3);
// otherwise comma-separated absolute http or https URLs, trailing slashes
// trimmed so that paths can be appended. Anything else is an error naming
// the faulty entry, so a typo fails at start-up rather than at the draw.
func ParseURLs(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return append([]string(nil), DefaultURLs...), nil
	case strings.EqualFold(s, "none"):
		return nil, nil
	}
	var urls []string
	for i, part := range strings.Split(s, ",") {
		u, err := parseBaseURL(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("SECKILL_BEACON_URLS entry %d %q: %w", i+1, part, err)
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// parseBaseURL checks one base URL: a scheme and host to reach, and no
// query or fragment, which the paths appended to it would break.
func parseBaseURL(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty URL (\"none\" alone means no beacon)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("parse: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("not an absolute http(s) URL")
	}
	if u.Host == "" {
		return "", fmt.Errorf("no host")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("a base URL takes no query, fragment or user info")
	}
	return strings.TrimRight(s, "/"), nil
}
