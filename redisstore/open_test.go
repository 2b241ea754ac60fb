package redisstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/redisstore"
)

func TestOpen_TheThreeURLForms(t *testing.T) {
	for url, want := range map[string]struct {
		topology redisstore.Topology
		replicas int
	}{
		"redis://127.0.0.1:6379/0": {redisstore.Single, 0},
		"redis-sentinel://127.0.0.1:26379?master_name=seckill&addr=127.0.0.1:26380": {redisstore.Sentinel, 1},
		"redis-cluster://127.0.0.1:7000?addr=127.0.0.1:7001&dial_timeout=2s":        {redisstore.Cluster, 1},
	} {
		st, err := redisstore.Open(url, "p", redisstore.Options{MinReplicas: -1})
		require.NoError(t, err, url)
		require.Equal(t, want.topology, st.Topology(), url)
		require.Equal(t, want.replicas, st.MinReplicas(), "%s: the default replica wait", url)
		_ = st.Close()
	}
	st, err := redisstore.Open("redis-cluster://127.0.0.1:7000", "p", redisstore.Options{MinReplicas: 2})
	require.NoError(t, err)
	require.Equal(t, 2, st.MinReplicas(), "SECKILL_REDIS_MIN_REPLICAS wins over the default")
	_ = st.Close()
}

func TestOpen_BadURLsSayWhatIsExpected(t *testing.T) {
	for _, url := range []string{
		"http://127.0.0.1:6379",
		"redis-sentinel://127.0.0.1:26379", // no master_name
		"redis-cluster://127.0.0.1:7000?no_such_option=1",
		"redis://127.0.0.1:6379/notanumber",
	} {
		_, err := redisstore.Open(url, "p", redisstore.Options{MinReplicas: -1})
		require.Error(t, err, url)
		require.Contains(t, err.Error(), "REDIS_URL must be", url)
	}
}
