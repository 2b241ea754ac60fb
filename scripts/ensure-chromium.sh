#!/usr/bin/env bash
# Makes sure the browser test has a Chromium: Debian's package, installed
# when missing (as root, with apt-get), or the binary in SECKILL_CHROMIUM.
set -euo pipefail
# The shopper page's browser test drives Debian's Chromium, headless.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${SECKILL_CHROMIUM:-}" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing chromium (for the browser test)"
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing: install Debian's chromium package, or set SECKILL_CHROMIUM to a Chrome binary" >&2
    exit 1
  fi
fi
