//go:build slim

package main

import (
	"context"
	"errors"
	"io"

	"github.com/seckill/seckill/app"
)

// errNoDevMode: the slim build (go build -tags slim) has no embedded
// Temporal server; it runs api, worker, migrate, audit, bench and the tools
// in a fraction of the full binary's memory.
var errNoDevMode = errors.New("this is the slim build of seckill (no embedded Temporal server): use the full build for dev and devserver")

func runDevServer(context.Context, app.Config, []string, io.Writer) error { return errNoDevMode }

func runDev(call) error { return errNoDevMode }
