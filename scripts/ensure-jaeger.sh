#!/usr/bin/env bash
# Makes sure the tracing test has a real trace store: Jaeger's all-in-one
# (collector with OTLP, in-memory storage, query API) on the PATH as
# jaeger-all-in-one, in $(go env GOPATH)/bin, or in SECKILL_JAEGER;
# otherwise it is built from the Go module proxy (pinned: the version the
# test was written against; a few minutes, once). Jaeger's go.mod has a
# replace directive, which `go install pkg@version` refuses, so the module
# is built as the main module from a copy of its source.
set -euo pipefail
version=v1.76.0
gobin="$(go env GOPATH)/bin"
if [ -n "${SECKILL_JAEGER:-}" ] || command -v jaeger-all-in-one >/dev/null 2>&1 \
   || [ -x "$gobin/jaeger-all-in-one" ]; then
  exit 0
fi
echo "installing Jaeger all-in-one $version (for the tracing test; a few minutes, once)"
dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
src=$(mktemp -d)
trap 'chmod -R u+w "$src"; rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
mkdir -p "$gobin"
(cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -trimpath -o "$gobin/jaeger-all-in-one" ./cmd/all-in-one)
