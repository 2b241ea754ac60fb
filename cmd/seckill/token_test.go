//go:build !slim

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/app"
	"github.com/seckill/seckill/auth"
)

// seckill token --claim mints a presale member's token: each claim at its
// pointer, verified by the secret the API uses in development.
func TestToken_ClaimsMakeAPresaleMembersToken(t *testing.T) {
	code, stdout, stderr := runArgs("token", "--user", "vic", "--claim", "/groups=vip", "--claim", "/groups=staff")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	cfg := app.Config{}
	cfg.WithDevSecrets()
	p, err := cfg.Secret().Verify(context.Background(), strings.TrimSpace(stdout))
	require.NoError(t, err)
	require.Equal(t, "vic", p.UserID)
	require.False(t, p.Admin)
	require.True(t, p.Holds(auth.MustAdminClaim("/groups=vip")))
	require.True(t, p.Holds(auth.MustAdminClaim("/groups=staff")))

	code, stdout, stderr = runArgs("token", "--user", "pat")
	require.Equal(t, 0, code, "stderr: %s", stderr)
	p, err = cfg.Secret().Verify(context.Background(), strings.TrimSpace(stdout))
	require.NoError(t, err)
	require.False(t, p.Holds(auth.MustAdminClaim("/groups=vip")), "no --claim, no member")

	code, _, stderr = runArgs("token", "--user", "vic", "--claim", "groups=vip")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "not a JSON Pointer")
	code, _, stderr = runArgs("token", "--user", "vic", "--claim", "/exp=1")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "registered claim")
}
