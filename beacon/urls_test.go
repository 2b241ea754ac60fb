package beacon_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/beacon"
)

func TestParseURLs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", beacon.DefaultURLs},
		{"  ", beacon.DefaultURLs},
		{"none", nil},
		{"NONE", nil},
		{"http://localhost:8081", []string{"http://localhost:8081"}},
		{"https://api.drand.sh/, http://127.0.0.1:9000//", []string{"https://api.drand.sh", "http://127.0.0.1:9000"}},
		{"https://relay.example/drand/", []string{"https://relay.example/drand"}},
	} {
		got, err := beacon.ParseURLs(tc.in)
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestParseURLs_RefusesWhatIsNotABaseURL(t *testing.T) {
	for _, in := range []string{
		"api.drand.sh",
		"ftp://api.drand.sh",
		"https://",
		"https://a.example,",
		"https://a.example,,https://b.example",
		"none,https://a.example",
		"https://a.example?x=1",
		"https://a.example/?",
		"https://a.example/#top",
		"https://user:pw@a.example",
		"http://[::1",
		"/relative/path",
	} {
		got, err := beacon.ParseURLs(in)
		require.Error(t, err, "%q", in)
		require.Nil(t, got, "%q", in)
	}
}

// The defaults are drand's public relays, and ParseURLs hands out a copy.
func TestDefaultURLs(t *testing.T) {
	require.Contains(t, beacon.DefaultURLs, "https://api.drand.sh")
	require.GreaterOrEqual(t, len(beacon.DefaultURLs), 3)
	got, err := beacon.ParseURLs("")
	require.NoError(t, err)
	got[0] = "http://spoiled"
	require.Equal(t, "https://api.drand.sh", beacon.DefaultURLs[0])
}
