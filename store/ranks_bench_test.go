package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/draw"
	"github.com/seckill/seckill/internal/testenv"
)

// BenchmarkSetRanks writes the ranks of a lobby of 200,000 entries in the
// batches RankDraw writes them (10,000), b.N times (the ranks cleared
// between, untimed), each time other ranks: what writing the ranks of a
// draw costs the database.
func BenchmarkSetRanks(b *testing.B) {
	const entries, batch = 200_000, 10_000
	st, _ := testenv.Store(b)
	sale := lobbyShoes(b, st)
	require.NoError(b, st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
		SELECT ?, 'b-' || g, decode(md5(g::text), 'hex'), 'eu-42', 1 FROM generate_series(1, ?) g`, sale.ID, entries).Error)
	var raw [][]byte
	require.NoError(b, st.Gorm().Raw(`SELECT entry FROM lobby_entries WHERE sale_id = ?`, sale.ID).Scan(&raw).Error)
	require.Len(b, raw, entries)
	b.ResetTimer()
	for i := range b.N {
		// A draw ranks its entries once: the ranks are unique.
		b.StopTimer()
		require.NoError(b, st.Gorm().Exec(`UPDATE lobby_entries SET rank = NULL, fits = NULL WHERE sale_id = ?`, sale.ID).Error)
		b.StartTimer()
		ranked := draw.Rank([]byte{byte(i), byte(i >> 8)}, raw)
		for j := range ranked {
			ranked[j].Fits = j%2 == i%2
		}
		for j := 0; j < len(ranked); j += batch {
			require.NoError(b, st.SetRanks(b.Context(), sale.ID, ranked[j:min(j+batch, len(ranked))]))
		}
	}
	b.ReportMetric(float64(b.N*entries)/b.Elapsed().Seconds(), "ranks/s")
}
