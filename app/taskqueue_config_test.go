//go:build !slim

package app_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/internal/cli"
)

// TEMPORAL_DRAW_TASK_QUEUE: the sale draws' task queue, seckill-draws
// unless set, listed with its default in the processes' help; the sagas'
// queue is refused, as the draws' worker cannot run sagas.
func TestConfig_DrawTaskQueue(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cfg, err := app.FromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, "seckill-orders", cfg.TaskQueue)
	require.Equal(t, "seckill-draws", cfg.DrawTaskQueue)
	require.Equal(t, seckill.DefaultDrawTaskQueue, cfg.DrawTaskQueue)
	require.True(t, slices.Contains(app.Settings(), cli.Var{Name: "TEMPORAL_DRAW_TASK_QUEUE", Default: "seckill-draws"}))

	cfg, err = app.FromEnv(env(map[string]string{"TEMPORAL_TASK_QUEUE": "shop-orders", "TEMPORAL_DRAW_TASK_QUEUE": "shop-draws"}))
	require.NoError(t, err)
	require.Equal(t, "shop-orders", cfg.TaskQueue)
	require.Equal(t, "shop-draws", cfg.DrawTaskQueue)

	_, err = app.FromEnv(env(map[string]string{"TEMPORAL_DRAW_TASK_QUEUE": "seckill-orders"}))
	require.ErrorContains(t, err, `TEMPORAL_DRAW_TASK_QUEUE must differ from TEMPORAL_TASK_QUEUE, both are "seckill-orders"`)
	_, err = app.FromEnv(env(map[string]string{"TEMPORAL_TASK_QUEUE": "seckill-draws"}))
	require.ErrorContains(t, err, "TEMPORAL_DRAW_TASK_QUEUE must differ from TEMPORAL_TASK_QUEUE")
}
