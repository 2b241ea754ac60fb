#!/usr/bin/env bash
# Makes sure clients/typescript has its npm packages (pinned in its
# package-lock.json): the TypeScript client's test (app's
# TestDev_ShowsProgressAndOpensADemoSale runs it against seckill dev),
# openapi-typescript (its types, checked against api/openapi.yaml) and
# Redocly's CLI (make lint-openapi). Needs Node.js 20 or later and npm.
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/clients/typescript"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing: install Node.js 20 or later (apt-get install nodejs npm)" >&2
  exit 1
fi
stamp="$dir/node_modules/.package-lock.json"
if [ -f "$stamp" ] && [ "$stamp" -nt "$dir/package-lock.json" ]; then
  exit 0
fi
echo "installing the TypeScript client's npm packages (clients/typescript)"
cd "$dir" && npm ci --no-audit --no-fund --loglevel=error
