#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis that seckill's tests and dev mode use
# answer on loopback, starting the machine's own servers when they are
# installed but stopped. Elsewhere, start them with:
#   docker compose up -d postgres redis
set -euo pipefail

PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
REDIS_HOST=${REDIS_HOST:-127.0.0.1}
REDIS_PORT=${REDIS_PORT:-6379}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_port() {
  for _ in $(seq 1 60); do
    port_open "$1" "$2" && return 0
    sleep 0.5
  done
  return 1
}

if ! port_open "$PGHOST" "$PGPORT"; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
  else
    echo "PostgreSQL is not answering on $PGHOST:$PGPORT; run: docker compose up -d postgres redis" >&2
    exit 1
  fi
  wait_port "$PGHOST" "$PGPORT" || { echo "PostgreSQL did not start" >&2; exit 1; }
fi

if ! port_open "$REDIS_HOST" "$REDIS_PORT"; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
  else
    echo "Redis is not answering on $REDIS_HOST:$REDIS_PORT; run: docker compose up -d postgres redis" >&2
    exit 1
  fi
  wait_port "$REDIS_HOST" "$REDIS_PORT" || { echo "Redis did not start" >&2; exit 1; }
fi
echo "PostgreSQL $PGHOST:$PGPORT and Redis $REDIS_HOST:$REDIS_PORT are up"

# The benchmark's claim anchor (and its test) runs Redis' own redis-benchmark.
if ! command -v redis-benchmark >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing redis-tools (redis-benchmark)"
    apt-get update -qq && apt-get install -y -qq redis-tools >/dev/null
  else
    echo "redis-benchmark is missing: install redis-tools" >&2
    exit 1
  fi
fi
