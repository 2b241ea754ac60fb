package app

import (
	"context"
	"io"
	"time"

	"github.com/seckill/seckill/draw/drawcli"
)

// DrawCommand runs `seckill draw verify --sale ID [--api URL]`
// (draw/drawcli): --api defaults to $SECKILL_API_URL, else
// http://$SECKILL_HTTP_ADDR, and the admitted orders are read with the
// admin token the other commands send (SECKILL_ADMIN_TOKEN, or one signed
// with SECKILL_JWT_SECRET, the dev secret when unset).
func DrawCommand(ctx context.Context, cfg Config, getenv func(string) string, args []string, stdout io.Writer) error {
	defaultAPI := getenv("SECKILL_API_URL")
	if defaultAPI == "" {
		defaultAPI = "http://" + cfg.HTTPAddr
	}
	return drawcli.Command(ctx, args, stdout, drawcli.Options{
		DefaultAPI: defaultAPI,
		Env:        Env(append([]string{"SECKILL_API_URL", "SECKILL_HTTP_ADDR"}, AdminEnv()...)...),
		AdminToken: func() (string, error) {
			cfg.WithDevSecrets()
			return cfg.AdminBearer("seckill-draw-verify", 15*time.Minute)
		},
	})
}
