module github.com/seckill/seckill/scripts/jaegerui

go 1.26.0

require github.com/tonistiigi/jaeger-ui-rest v0.0.0-20250408171107-3dd17559e117

require github.com/pkg/errors v0.9.1 // indirect
