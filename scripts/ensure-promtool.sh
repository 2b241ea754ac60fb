#!/usr/bin/env bash
# Makes sure the alerting rules' tests have Prometheus' promtool: on the
# PATH, in $(go env GOPATH)/bin, or in SECKILL_PROMTOOL; otherwise it is
# built from the Go module proxy (pinned: the version the rules were
# tested with; several minutes, once).
set -euo pipefail
version=v0.316.0
if [ -n "${SECKILL_PROMTOOL:-}" ] || command -v promtool >/dev/null 2>&1 \
   || [ -x "$(go env GOPATH)/bin/promtool" ]; then
  exit 0
fi
echo "installing promtool $version (for the alerting rules' tests; several minutes, once)"
GOTOOLCHAIN=local GOFLAGS=-mod=mod go install "github.com/prometheus/prometheus/cmd/promtool@$version"
