#!/usr/bin/env bash
# Makes sure the tracing test has a real trace store: Jaeger's all-in-one
# (collector with OTLP, in-memory storage, query API) on the PATH as
# jaeger-all-in-one, in $(go env GOPATH)/bin, or in SECKILL_JAEGER;
# otherwise it is built from the Go module proxy (pinned: the version the
# test was written against; a few minutes, once, up to 15 on a busy
# machine). Jaeger's go.mod has a replace directive, which `go install
# pkg@version` refuses, so the module is built as the main module from a
# copy of its source. It says which binary the test will use, or where it
# put the one it built. That binary serves no web UI (the module lacks its
# assets): scripts/run-jaeger.sh (`make jaeger-ui`) adds one.
set -euo pipefail
version=v1.76.0
gobin="$(go env GOPATH)/bin"
if [ -n "${SECKILL_JAEGER:-}" ]; then
  echo "Jaeger all-in-one: $SECKILL_JAEGER (SECKILL_JAEGER)"
  exit 0
fi
for found in "$(command -v jaeger-all-in-one || true)" "$gobin/jaeger-all-in-one"; do
  if [ -n "$found" ] && [ -x "$found" ]; then
    echo "Jaeger all-in-one: $found"
    exit 0
  fi
done
echo "installing Jaeger all-in-one $version into $gobin (for the tracing test and make jaeger-ui; a few minutes, once, 15 on a busy machine)"
dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
src=$(mktemp -d)
trap 'chmod -R u+w "$src"; rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
mkdir -p "$gobin"
(cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -o "$gobin/jaeger-all-in-one" ./cmd/all-in-one)
echo "Jaeger all-in-one: $gobin/jaeger-all-in-one (not on the PATH unless $gobin is; it has no web UI of its own: make jaeger-ui runs it with one)"
