# seckill: `make dev` runs the system, `make test` runs every test.
SHELL     := /bin/bash
GO        ?= go
# Packages that embed the Temporal server link slowly (minutes, cold): they
# are tested without -race; everything else runs with it. (bench runs the
# system through app: its race build alone compiled the server's ~300
# packages again.)
SLOW_PKGS := ./app/... ./cmd/... ./bench/...
# Listed when test-fast runs, not for every target: `go list` takes seconds
# and downloads every module (chaos' included) before `make dev` starts.
FAST_PKGS = $$($(GO) list ./... | grep -v -e '/app$$' -e '/cmd/' -e '/bench$$' -e '/devserver$$')

FUZZTIME  ?= 20s
SOAK_RATE ?= 11000
FUZZ_TARGETS := api:FuzzClaim api:FuzzVerifySignature api:FuzzParseEvent auth:FuzzParseToken auth:FuzzParseTokenClaims api:FuzzIdempotencyKey

.PHONY: help dev test unit-tests tools browser stripe-mock jaeger jaeger-ui test-fast test-e2e vet fmt build services fuzz chaos chaos-short bench soak helm test-chart promtool test-alerts lint-openapi reference
help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# Built to bin/seckill, then run in the shell's place: Ctrl-C reaches
# seckill, whose clean stop exits 0, with nothing between it and make.
# `go run` exits 1 whenever it was interrupted itself, even after its
# program stopped cleanly, and make reported that as an error.
dev: services ## run everything in one process: Temporal + UI, worker, relay, API (builds bin/seckill)
	$(GO) build -o bin/seckill ./cmd/seckill
	exec bin/seckill dev

# The tools the unit tests do not need (Chromium, Jaeger, Helm, promtool:
# minutes to build on a fresh machine) are installed while vet and the unit
# tests run, which spend much of their time waiting on PostgreSQL and Redis;
# the end-to-end tests, the chart and the rules follow, once both are done.
test: services stripe-mock ## run every test (starts PostgreSQL and Redis, installs Chromium, stripe-mock, Jaeger, Helm, promtool and the TypeScript client's npm packages if needed)
	@$(MAKE) --no-print-directory -j2 unit-tests tools
	@$(MAKE) --no-print-directory lint-openapi test-e2e test-chart test-alerts

unit-tests: vet
	@$(MAKE) --no-print-directory test-fast

# On a fresh machine the Go tools take minutes to build (6 to 15 here, one
# after the other, mostly fetching modules and linking): side by side, the
# fetching overlaps.
tools: ## make sure every tool the tests run is here, installing the missing ones side by side
	@pids=; for tool in chromium stripe-mock jaeger helm promtool node-tools; do \
	  bash scripts/ensure-$$tool.sh & pids="$$pids $$!"; \
	done; status=0; for p in $$pids; do wait $$p || status=1; done; exit $$status

test-fast: ## unit and integration tests, with the race detector
	$(GO) test -race -count=1 -timeout 10m $(FAST_PKGS)

test-e2e: ## end-to-end tests on the embedded Temporal server
	$(GO) test -count=1 -timeout 20m -v $(SLOW_PKGS)

lint-openapi: ## lint api/openapi.yaml with Redocly's recommended rules as errors (api/redocly.yaml)
	@bash scripts/ensure-node-tools.sh
	cd clients/typescript && npx --no-install redocly lint --config ../../api/redocly.yaml ../../api/openapi.yaml --format=summary
	@cd clients/typescript && npx --no-install redocly build-docs ../../api/openapi.yaml -o "$${TMPDIR:-/tmp}/seckill-reference.html" >/dev/null
	@cmp -s docs/reference.html "$${TMPDIR:-/tmp}/seckill-reference.html" || { echo "docs/reference.html is not api/openapi.yaml's: run make reference"; exit 1; }

reference: ## render api/openapi.yaml for people: docs/reference.html (Redoc)
	@bash scripts/ensure-node-tools.sh
	cd clients/typescript && npx --no-install redocly build-docs ../../api/openapi.yaml -o ../../docs/reference.html

vet: ## go vet (both builds) and a gofmt check
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags slim ./...

fuzz: ## run every fuzz target for FUZZTIME each (default 20s)
	@for pt in $(FUZZ_TARGETS); do \
	  p=$${pt%%:*}; t=$${pt#*:}; \
	  echo "== $$p $$t"; $(GO) test ./$$p -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

chaos: services stripe-mock ## fault-injection suite, 3 seeds per variant: one Redis (wiped), a Sentinel group; 4 stock segments + waitlist on Sentinel, on a Cluster, and with Stripe (stripe-mock); a lobby and its draw on Sentinel, and with 4 segments on a Cluster; 3 variants, quantities 1..3, 4 segments + waitlist on Sentinel and on a Cluster; 300 units, 3000 buyers, 40 s of faults; then the model test of the Redis scripts (variants, quantities, restock), 20,000 cases
	$(GO) run ./chaos --seeds 1,2,3
	$(GO) run ./chaos --seeds 1,2,3 --redis sentinel
	$(GO) run ./chaos --seeds 1,2,3 --segments 4 --waitlist 0.5 --redis sentinel
	$(GO) run ./chaos --seeds 1,2,3 --segments 4 --waitlist 0.5 --redis cluster
	$(GO) run ./chaos --seeds 1,2,3 --segments 4 --waitlist 0.5 --redis sentinel --payments stripe
	$(GO) run ./chaos --seeds 1,2,3 --lobby --redis sentinel
	$(GO) run ./chaos --seeds 1,2,3 --lobby --segments 4 --redis cluster
	$(GO) run ./chaos --seeds 1,2,3 --variants 3 --quantity-max 3 --segments 4 --waitlist 0.5 --redis sentinel
	$(GO) run ./chaos --seeds 1,2,3 --variants 3 --quantity-max 3 --segments 4 --waitlist 0.5 --redis cluster
	$(GO) test ./redisstore -run TestModel -count=1 -rapid.checks=20000 -timeout 180m

# The Sentinel group's failover under claims is walked by the segmented run,
# and under the draw by the lobby run; the plain Sentinel run and the one
# Redis wiped are make chaos's (the e2e test TestRedisLoss_* wipes Redis in
# make test), which keeps CI under its 20 minutes.
chaos-short: services ## two short chaos runs (before a release; CI ran them until issue 32): 4 segments + waitlist on Sentinel, and a lobby and its draw on Sentinel; 60 units, 600 buyers, 20 s of faults
	$(GO) run ./chaos --seeds 1 --buyers 600 --units 60 --faults-for 20s --segments 4 --waitlist 0.5 --redis sentinel
	$(GO) run ./chaos --seeds 1 --buyers 600 --units 60 --faults-for 20s --lobby --redis sentinel

BENCH_ARGS ?=
bench: services build ## the flash-sale benchmark with both anchors (BENCHMARKS.md); BENCH_ARGS adds flags
	bin/seckill bench --slim-binary bin/seckill-slim $(BENCH_ARGS)

soak: services build ## 10 minutes at SOAK_RATE claims/s (half the measured maximum) over 4 sales
	bin/seckill bench --slim-binary bin/seckill-slim --sales 4 --units 250 --rate $(SOAK_RATE) --duration 10m --buyers 400000 \
	  --timeout 30s --anchor-calls 0 --anchor-workflows 0 --out bench-out/soak $(BENCH_ARGS)

fmt: ## format the code
	gofmt -w .

build: ## build bin/seckill (everything) and bin/seckill-slim (api, worker and tools; no embedded Temporal)
	$(GO) build -o bin/seckill ./cmd/seckill
	$(GO) build -tags slim -o bin/seckill-slim ./cmd/seckill

browser: ## make sure the browser test has a Chromium (installs Debian's chromium if missing)
	@bash scripts/ensure-chromium.sh

stripe-mock: ## make sure the Stripe tests have stripe-mock (builds it from the module proxy if missing)
	@bash scripts/ensure-stripe-mock.sh

jaeger: ## make sure the tracing test has Jaeger's all-in-one (builds it into $(go env GOPATH)/bin if missing) and say where it is
	@bash scripts/ensure-jaeger.sh

jaeger-ui: ## run Jaeger (all-in-one, in memory) with its web UI on http://127.0.0.1:16686 and OTLP on 127.0.0.1:4318 (docs/EVENTS-AND-TRACES.md)
	@bash scripts/run-jaeger.sh

services: ## make sure PostgreSQL and Redis answer on loopback
	@bash scripts/ensure-services.sh

helm: ## make sure the chart check has Helm (builds v3.22.0 into $(go env GOPATH)/bin if missing) and say where it is
	@bash scripts/ensure-helm.sh

test-chart: helm ## the Helm chart (deploy/helm/seckill): helm lint, helm template, every manifest decoded strictly into the Kubernetes types
	cd deploy/helm/chartcheck && $(GO) test -count=1 ./...

promtool: ## make sure the alerting rules' tests have promtool (builds it from the module proxy if missing)
	@bash scripts/ensure-promtool.sh

# promtool: SECKILL_PROMTOOL, or the one on the PATH, or the one ensure-promtool built.
PROMTOOL = $${SECKILL_PROMTOOL:-$$(command -v promtool || echo "$$($(GO) env GOPATH)/bin/promtool")}
test-alerts: promtool ## the alerting rules (deploy/prometheus/alerts.yml): promtool check rules, then their unit tests (alerts_test.yml)
	@$(PROMTOOL) check rules deploy/prometheus/alerts.yml
	@$(PROMTOOL) test rules deploy/prometheus/alerts_test.yml
