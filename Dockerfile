# One image for every seckill command: api, worker, migrate, dev, token.
# --build-arg GO_TAGS=slim builds the slim binary instead: everything but
# dev and devserver (no embedded Temporal server), a third of the memory.

# golang:1.26 must be at least the go version in go.mod; GOTOOLCHAIN=local
# fails the build rather than downloading another toolchain.
FROM golang:1.26 AS build
ENV GOTOOLCHAIN=local CGO_ENABLED=0
ARG GO_TAGS=""
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Static binary: no cgo needed (the embedded Temporal dev server's SQLite is
# modernc.org/sqlite, pure Go).
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -tags "${GO_TAGS}" -ldflags="-s -w" -o /seckill ./cmd/seckill

# CA certificates and tzdata included; runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /seckill /seckill
# Listen on all interfaces inside the container (the binary's default is
# 127.0.0.1:8080).
ENV SECKILL_HTTP_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/seckill"]
