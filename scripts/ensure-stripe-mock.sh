#!/usr/bin/env bash
# Makes sure the Stripe tests have Stripe's API mock: stripe-mock on the
# PATH, in $(go env GOPATH)/bin, or in SECKILL_STRIPE_MOCK; otherwise it is
# built from the Go module proxy (pinned: the version the tests were
# written against).
set -euo pipefail
version=v0.203.0
if [ -n "${SECKILL_STRIPE_MOCK:-}" ] || command -v stripe-mock >/dev/null 2>&1 \
   || [ -x "$(go env GOPATH)/bin/stripe-mock" ]; then
  exit 0
fi
echo "installing stripe-mock $version (for the Stripe provider's tests)"
GOFLAGS=-mod=mod go install "github.com/stripe/stripe-mock@$version"
