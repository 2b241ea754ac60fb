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
# remove_all_sd leaves out every service discovery (the cloud and Kubernetes
# SDKs): promtool checks and tests rules here, it discovers nothing, and the
# build is much smaller.
GOTOOLCHAIN=local GOFLAGS=-mod=mod go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/promtool@$version"
