#!/usr/bin/env bash
# Runs Jaeger's all-in-one with its web UI, on loopback only: traces in
# memory (the newest 50,000), OTLP over HTTP on 127.0.0.1:4318 (gRPC on
# 4317), the UI and the query API on http://127.0.0.1:16686. Ctrl-C stops
# it, and its traces go with it.
#
# The binary is the one scripts/ensure-jaeger.sh installs (built from
# Jaeger's Go module, which lacks the UI's assets); the UI is written once
# by scripts/jaegerui (from a Go module that carries Jaeger UI v1.68.0)
# into $(go env GOPATH)/share/jaeger-ui-v1.68.0, and served with
# --query.static-files.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
gopath="$(go env GOPATH)"
bash "$here/ensure-jaeger.sh"
bin="${SECKILL_JAEGER:-$(command -v jaeger-all-in-one || echo "$gopath/bin/jaeger-all-in-one")}"
ui="$gopath/share/jaeger-ui-v1.68.0"
if [ ! -f "$ui/index.html" ]; then
  echo "writing Jaeger UI's assets to $ui (once)"
  tmp="$ui.tmp.$$"
  (cd "$here/jaegerui" && GOFLAGS=-mod=mod go run . "$tmp")
  mv "$tmp" "$ui"
fi
log="${TMPDIR:-/tmp}/jaeger-all-in-one.log"
cat <<MSG
Jaeger UI     http://127.0.0.1:16686   (assets: $ui)
OTLP traces   http://127.0.0.1:4318    run seckill with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
Jaeger's log  $log
Ctrl-C stops it (its traces are kept in memory only).
MSG
"$bin" --query.static-files="$ui" --memory.max-traces=50000 \
  --collector.otlp.http.host-port=127.0.0.1:4318 --collector.otlp.grpc.host-port=127.0.0.1:4317 \
  --collector.http-server.host-port=127.0.0.1:14268 --collector.grpc-server.host-port=127.0.0.1:14250 \
  --query.http-server.host-port=127.0.0.1:16686 --query.grpc-server.host-port=127.0.0.1:16685 \
  --admin.http.host-port=127.0.0.1:14269 >"$log" 2>&1 || {
  rc=$?
  echo "Jaeger stopped (exit $rc); from its log ($log):" >&2
  grep -h '"level":"\(fatal\|error\)"' "$log" | tail -n 2 >&2 || tail -n 3 "$log" >&2
  exit "$rc"
}
