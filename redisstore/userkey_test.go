package redisstore_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/redisstore"
)

// A user id in a key name: the ids of before provider subjects keep their
// keys (an Idempotency-Key recorded before an upgrade is still found);
// any other is encoded, never splits a key or its hash tag, and no two
// ids share one.
func TestUserInKey_OldIdsUnchangedOthersEncodedOneToOne(t *testing.T) {
	require.Equal(t, "bob", redisstore.UserInKey("bob"))
	require.Equal(t, "b0b_-X", redisstore.UserInKey("b0b_-X"))
	seen := map[string]string{}
	for _, id := range []string{"auth0|5f3c9a2b", "a:b", "{s1}", "~Ym9i", "Ym9i", "bob@shop.example", "b o b", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("~", 255)} {
		k := redisstore.UserInKey(id)
		require.NotContains(t, k, ":", id)
		require.NotContains(t, k, "{", id)
		require.NotContains(t, k, "}", id)
		if other, dup := seen[k]; dup {
			t.Fatalf("%q and %q share the key %q", id, other, k)
		}
		seen[k] = id
	}
	require.Equal(t, "~YXV0aDB8NWYzYzlhMmI", redisstore.UserInKey("auth0|5f3c9a2b"))
}
