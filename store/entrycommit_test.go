package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/store"
)

// inserts counts the statements that insert lobby entries.
type inserts struct{ n atomic.Int64 }

func (c *inserts) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "INSERT INTO lobby_entries") {
		c.n.Add(1)
	}
	return ctx
}

func (c *inserts) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingStore is a store of conns connections on a fresh database that
// counts the statements inserting lobby entries.
func countingStore(t *testing.T, conns int) (*store.Store, *inserts) {
	t.Helper()
	counted := &inserts{}
	st, err := store.OpenTraced(t.Context(), testenv.DatabaseURL(t), store.Options{MaxOpenConns: conns}, counted)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, counted
}

func lobbyRows(t *testing.T, st *store.Store, saleID int64) int64 {
	t.Helper()
	var n int64
	require.NoError(t, st.Gorm().Raw("SELECT count(*) FROM lobby_entries WHERE sale_id = ?", saleID).Scan(&n).Error)
	return n
}

// A batch of the group commit enters every buyer in it with one
// statement, each with an entry of their own and the item they asked for.
func TestEnterBatch_OneStatementEntersEveryBuyer(t *testing.T) {
	t.Parallel()
	st, counted := countingStore(t, 2)
	sale := lobbyShoes(t, st)
	const n = 300
	asked := make([]store.EntryAsked, n)
	for i := range asked {
		asked[i] = store.EntryAsked{UserID: "buyer-" + strconv.Itoa(i), Item: seckill.Item{SKU: "eu-42", Quantity: 1 + i%3}}
	}
	answers := st.EnterBatch(t.Context(), sale.ID, asked)
	require.Equal(t, int64(1), counted.n.Load(), "one statement for the batch")
	seen := map[string]bool{}
	for i, a := range answers {
		require.NoError(t, a.Err)
		require.True(t, a.Created, asked[i].UserID)
		require.Equal(t, asked[i].Item, a.Entry.Item)
		require.Equal(t, asked[i].UserID, a.Entry.UserID)
		require.Len(t, a.Entry.Entry, 16)
		require.False(t, seen[string(a.Entry.Entry)], "entries are distinct")
		seen[string(a.Entry.Entry)] = true
		again, err := st.LobbyEntryOf(t.Context(), sale.ID, asked[i].UserID)
		require.NoError(t, err)
		require.Equal(t, a.Entry.Entry, again.Entry, "the entry answered is the one committed")
	}
	require.Equal(t, int64(n), lobbyRows(t, st, sale.ID))
}

// A buyer who asks twice in one batch gets one entry (one answer creates
// it, the other answers it); a buyer who entered before is answered the
// entry they have, with its item, whatever they ask for now.
func TestEnterBatch_ABuyerTwiceInABatchOrEnteredBeforeGetsTheirOneEntry(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	before, created, err := st.Enter(t.Context(), sale.ID, "early", seckill.Item{SKU: "eu-43", Quantity: 2})
	require.NoError(t, err)
	require.True(t, created)
	answers := st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{
		{UserID: "twice", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "early", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "twice", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
	})
	for _, a := range answers {
		require.NoError(t, a.Err)
	}
	require.True(t, answers[0].Created)
	require.False(t, answers[2].Created)
	require.Equal(t, answers[0].Entry.Entry, answers[2].Entry.Entry)
	require.False(t, answers[1].Created)
	require.Equal(t, before.Entry, answers[1].Entry.Entry)
	require.Equal(t, seckill.Item{SKU: "eu-43", Quantity: 2}, answers[1].Entry.Item, "the item the entry was made with")
	require.Equal(t, int64(2), lobbyRows(t, st, sale.ID))
}

// An entry naming a variant the sale does not have is refused alone: the
// others of its batch are entered.
func TestEnterBatch_AnUnknownSKUIsRefusedAloneAndTheRestEntered(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	answers := st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{
		{UserID: "a", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "b", Item: seckill.Item{SKU: "eu-99", Quantity: 1}},
		{UserID: "c", Item: seckill.Item{SKU: "eu-43", Quantity: 1}},
	})
	require.NoError(t, answers[0].Err)
	require.True(t, answers[0].Created)
	require.ErrorIs(t, answers[1].Err, store.ErrVariantNotFound)
	require.NoError(t, answers[2].Err)
	require.True(t, answers[2].Created)
	require.Equal(t, int64(2), lobbyRows(t, st, sale.ID))
}

// A closed lobby refuses every new entry of a batch and still answers the
// entries it has.
func TestEnterBatch_AClosedLobbyRefusesNewEntriesAndAnswersTheOnesItHas(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	before, _, err := st.Enter(t.Context(), sale.ID, "early", seckill.DefaultItem)
	require.Error(t, err, "shoes have no default variant")
	before, _, err = st.Enter(t.Context(), sale.ID, "early", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.NoError(t, err)
	require.NoError(t, st.CloseLobby(t.Context(), sale.ID))
	answers := st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{
		{UserID: "late-1", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "early", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "late-2", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
	})
	require.ErrorIs(t, answers[0].Err, seckill.ErrLobbyClosed)
	require.ErrorIs(t, answers[2].Err, seckill.ErrLobbyClosed)
	require.NoError(t, answers[1].Err)
	require.Equal(t, before.Entry, answers[1].Entry.Entry)
	require.Equal(t, int64(1), lobbyRows(t, st, sale.ID))
}

// Many buyers entering at once are each answered once their own entry is
// committed, and the queue's batches write them all: every answer is in
// the table, with the entry it named.
func TestEnter_ManyBuyersAtOnceAreEachCommittedBeforeTheirAnswer(t *testing.T) {
	t.Parallel()
	st, counted := countingStore(t, 8)
	sale := lobbyShoes(t, st)
	const n = 600
	var (
		wg      sync.WaitGroup
		answers sync.Map
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := "buyer-" + strconv.Itoa(i)
			e, created, err := st.Enter(t.Context(), sale.ID, user, seckill.Item{SKU: "eu-43", Quantity: 1})
			if assert.NoError(t, err) && assert.True(t, created) {
				answers.Store(user, e.Entry)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int64(n), lobbyRows(t, st, sale.ID))
	answers.Range(func(user, entry any) bool {
		got, err := st.LobbyEntryOf(t.Context(), sale.ID, user.(string))
		require.NoError(t, err)
		require.Equal(t, entry, got.Entry)
		return true
	})
	t.Logf("%d entries in %d statements", n, counted.n.Load())
	require.Less(t, counted.n.Load(), int64(n), "entries that arrived together were written together")
}

// A buyer who stops waiting (their request's deadline) while their batch
// waits on the sale's row is answered an error at their deadline, and the
// others of the batch are not: once the row is free the batch is written,
// and the buyer's retry is answered the entry they were given (nothing
// half-written, nothing lost).
func TestEnter_ABuyerWhoStopsWaitingDoesNotFailTheBatch(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	// Hold the sale's row as the draw's close does: entries wait on it.
	tx := st.Gorm().Begin()
	require.NoError(t, tx.Exec("SELECT 1 FROM sales WHERE id = ? FOR UPDATE", sale.ID).Error)
	impatient, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var (
		wg      sync.WaitGroup
		patient error
		created bool
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, created, patient = st.Enter(t.Context(), sale.ID, "patient", seckill.Item{SKU: "eu-42", Quantity: 1})
	}()
	_, _, err := st.Enter(impatient, sale.ID, "impatient", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.ErrorIs(t, err, seckill.ErrUnavailable, "a deadline is the database not answering in time")
	require.NoError(t, tx.Rollback().Error)
	wg.Wait()
	require.NoError(t, patient)
	require.True(t, created)
	require.Eventually(t, func() bool { return lobbyRows(t, st, sale.ID) == 2 }, 10*time.Second, 20*time.Millisecond,
		"the impatient buyer's entry is written with its batch")
	again, created, err := st.Enter(t.Context(), sale.ID, "impatient", seckill.Item{SKU: "eu-42", Quantity: 1})
	require.NoError(t, err)
	require.False(t, created, "the retry finds the entry")
	require.Len(t, again.Entry, 16)
}

// BenchmarkEnterBatch writes batches of 256 first entries into one
// lobby (b.N batches): the database's cost of an entry in the group
// commit, without the API.
func BenchmarkEnterBatch(b *testing.B) {
	st, _ := testenv.Store(b)
	sale := lobbyShoes(b, st)
	const size = 256
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		asked := make([]store.EntryAsked, size)
		for j := range asked {
			asked[j] = store.EntryAsked{UserID: "buyer-" + strconv.Itoa(i*size+j), Item: seckill.Item{SKU: "eu-42", Quantity: 1}}
		}
		for _, a := range st.EnterBatch(b.Context(), sale.ID, asked) {
			if a.Err != nil || !a.Created {
				b.Fatal(a.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "entries/s")
}

// scans are PostgreSQL's counts of the scans of lobby_entries. st has one
// connection: the counts its statements made so far are reported first.
func scans(t *testing.T, st *store.Store) (seq, idx int64) {
	t.Helper()
	var r struct{ Seq, Idx int64 }
	require.NoError(t, st.Gorm().Exec(`SELECT pg_stat_force_next_flush()`).Error)
	require.NoError(t, st.Gorm().Exec(`SELECT 1`).Error) // flushed as it ends
	require.NoError(t, st.Gorm().Exec(`SELECT pg_stat_clear_snapshot()`).Error)
	require.NoError(t, st.Gorm().Raw(`SELECT seq_scan AS seq, coalesce(idx_scan, 0) AS idx FROM pg_stat_user_tables WHERE relname = 'lobby_entries'`).Scan(&r).Error)
	return r.Seq, r.Idx
}

// A lobby that was small when its first batches were written and is
// large now (a new shop's first drop fills it at thousands a second,
// faster than autovacuum analyzes it) is never scanned whole by a batch:
// a plan cached on the connection while the table was small did so for
// every batch, slower and slower as the lobby grew.
func TestEnterBatch_ALobbyThatGrewFastIsNeverScannedWhole(t *testing.T) {
	t.Parallel()
	// One connection: every batch runs where the ones before ran.
	st, _ := countingStore(t, 1)
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	// Autovacuum analyzes the small table, as it does a new database's.
	require.NoError(t, st.Gorm().Exec(`ANALYZE lobby_entries`).Error)
	for i := range 8 { // more than the 5 custom plans PostgreSQL makes before a generic one
		for _, a := range st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{{UserID: "small-" + strconv.Itoa(i), Item: item}}) {
			require.NoError(t, a.Err)
		}
	}
	require.NoError(t, st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
		SELECT ?, 'grown-' || g, decode(md5(g::text), 'hex'), 'eu-42', 1 FROM generate_series(1, 20000) g`, sale.ID).Error)
	seq0, idx0 := scans(t, st)
	answers := st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{
		{UserID: "late-1", Item: item}, {UserID: "grown-19999", Item: item}, {UserID: "small-3", Item: item},
	})
	for _, a := range answers {
		require.NoError(t, a.Err)
	}
	require.True(t, answers[0].Created)
	require.False(t, answers[1].Created)
	require.False(t, answers[2].Created)
	seq, idx := scans(t, st)
	require.Greater(t, idx, idx0, "the batch looks its buyers up by index")
	require.Equal(t, seq0, seq, "no batch scans the lobby whole")
}

// Connections to PostgreSQL killed while entries are being committed lose
// no entry that was answered: every buyer answered an entry has it in the
// table, the one they were told; a buyer answered an error is answered an
// entry when they try again, and every buyer ends with exactly one.
func TestEnter_KilledConnectionsLoseNoAnsweredEntry(t *testing.T) {
	t.Parallel()
	dsn := testenv.DatabaseURL(t)
	st, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	killer, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = killer.Close() })
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}

	stop := make(chan struct{})
	var killed atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			var n int64
			_ = killer.Gorm().Raw(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n).Error
			killed.Add(n)
		}
	}()
	const buyers = 1500
	told := make([][]byte, buyers)
	failed := make([]bool, buyers)
	created := make([]bool, buyers)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 200)
	for i := range buyers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			e, c, err := st.Enter(t.Context(), sale.ID, "buyer-"+strconv.Itoa(i), item)
			if err != nil {
				assert.ErrorIs(t, err, seckill.ErrUnavailable, "a killed connection is the database unavailable (503)")
				failed[i] = true
				return
			}
			told[i], created[i] = e.Entry, c
		}()
	}
	wg.Wait()
	close(stop)
	nFailed := 0
	for i := range buyers {
		if failed[i] {
			nFailed++
		}
	}
	t.Logf("%d connections killed; %d of %d entries answered an error", killed.Load(), nFailed, buyers)
	require.Positive(t, killed.Load(), "connections were killed while entries were committed")
	// The buyers come back to a store whose connections were not killed
	// (the first's idle ones may be dead until it notices).
	back, err := store.Open(t.Context(), dsn, store.Options{MaxOpenConns: 8})
	require.NoError(t, err)
	t.Cleanup(func() { _ = back.Close() })
	for i := range buyers {
		user := "buyer-" + strconv.Itoa(i)
		if failed[i] {
			e, c, err := back.Enter(t.Context(), sale.ID, user, item)
			require.NoError(t, err, "the retry of %s", user)
			told[i], created[i] = e.Entry, c
		} else {
			require.True(t, created[i], "%s entered once, answered as made", user)
		}
		got, err := back.LobbyEntryOf(t.Context(), sale.ID, user)
		require.NoError(t, err, "%s was answered an entry", user)
		require.Equal(t, told[i], got.Entry, "%s has the entry they were told", user)
	}
	require.Equal(t, int64(buyers), lobbyRows(t, back, sale.ID))
}

// holdSale holds the sale's row as the draw's close does, until the
// returned function releases it: entries wait on it.
func holdSale(t *testing.T, st *store.Store, saleID int64) (release func()) {
	t.Helper()
	tx := st.Gorm().Begin()
	require.NoError(t, tx.Exec("SELECT 1 FROM sales WHERE id = ? FOR UPDATE", saleID).Error)
	var once sync.Once
	release = func() { once.Do(func() { require.NoError(t, tx.Rollback().Error) }) }
	t.Cleanup(release)
	return release
}

// After an outage, the writers do not write the entries of buyers who
// stopped waiting: the queue they left is dropped, and a buyer who asks
// once the database answers again is entered at once.
func TestEnter_EntriesOfBuyersWhoLeftAreNotWrittenAfterAnOutage(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	release := holdSale(t, st, sale.ID)
	// Patient buyers, one after another, until every writer of the sale
	// holds one and waits on the sale's row.
	var patient sync.WaitGroup
	patients := 0
	for st.EntryWriters(sale.ID) < 4 || st.EntriesQueued(sale.ID) > 0 {
		require.Less(t, patients, 100, "the writers never all waited")
		patient.Add(1)
		user := "patient-" + strconv.Itoa(patients)
		go func() {
			defer patient.Done()
			_, _, err := st.Enter(t.Context(), sale.ID, user, item)
			assert.NoError(t, err)
		}()
		patients++
		time.Sleep(20 * time.Millisecond)
	}
	// Two thousand who give up after 100 ms queue behind them.
	var left sync.WaitGroup
	for i := range 2000 {
		left.Add(1)
		go func() {
			defer left.Done()
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			_, _, err := st.Enter(ctx, sale.ID, "gone-"+strconv.Itoa(i), item)
			assert.ErrorIs(t, err, seckill.ErrUnavailable)
		}()
	}
	left.Wait()
	release()
	patient.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, created, err := st.Enter(ctx, sale.ID, "fresh", item)
	require.NoError(t, err)
	require.True(t, created)
	require.Eventually(t, func() bool { return !st.EntryWritersBusy(sale.ID) }, 30*time.Second, 10*time.Millisecond,
		"the sale's writers are done")
	require.Less(t, lobbyRows(t, st, sale.ID), int64(100), "the entries of buyers who left were dropped, not written")
}

// A sale's queue is bounded: past it an entry is refused at once as
// unavailable (503), not queued behind a backlog.
func TestEnter_AFullQueueRefusesAtOnce(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	st.SetEntryQueueMax(8)
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	release := holdSale(t, st, sale.ID)
	var wg sync.WaitGroup
	enter := func(user string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := st.Enter(t.Context(), sale.ID, user, item)
			assert.NoError(t, err, user)
		}()
	}
	// Buyers one after another: the first take the writers (each waits on
	// the sale's row), the next fill the queue.
	launched := 0
	for st.EntriesQueued(sale.ID) < 8 {
		require.Less(t, launched, 100, "the queue never filled")
		enter("waiting-" + strconv.Itoa(launched))
		launched++
		time.Sleep(10 * time.Millisecond)
	}
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, _, err := st.Enter(ctx, sale.ID, "one-too-many", item)
		return errors.Is(err, seckill.ErrUnavailable) && ctx.Err() == nil
	}, 10*time.Second, 20*time.Millisecond, "an entry past the queue's bound is refused at once, before its deadline")
	release()
	wg.Wait()
	require.Equal(t, int64(launched), lobbyRows(t, st, sale.ID), "the ones queued are written")
}

// A sale whose row is held (its draw closing it, a stuck transaction)
// delays the entries of no other sale.
func TestEnter_ASaleWhoseRowIsHeldDelaysNoOtherSale(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	held, other := lobbyShoes(t, st), lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	release := holdSale(t, st, held.ID)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := st.Enter(t.Context(), held.ID, "waiting-"+strconv.Itoa(i), item)
			assert.NoError(t, err)
		}()
	}
	time.Sleep(100 * time.Millisecond) // every writer of the held sale waits
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, created, err := st.Enter(ctx, other.ID, "elsewhere", item)
	require.NoError(t, err, "the other sale's entry is written while the first sale's row is held")
	require.True(t, created)
	release()
	wg.Wait()
}

// A value the table refuses (a quantity outside 1..100) fails its own
// entry only: the others of its batch are entered.
func TestEnterBatch_ARefusedQuantityFailsOnlyItsEntry(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	answers := st.EnterBatch(t.Context(), sale.ID, []store.EntryAsked{
		{UserID: "a", Item: seckill.Item{SKU: "eu-42", Quantity: 1}},
		{UserID: "b", Item: seckill.Item{SKU: "eu-42", Quantity: 101}},
		{UserID: "c", Item: seckill.Item{SKU: "eu-42", Quantity: 1 << 32}},
		{UserID: "d", Item: seckill.Item{SKU: "eu-43", Quantity: 2}},
	})
	require.NoError(t, answers[0].Err)
	require.True(t, answers[0].Created)
	require.Error(t, answers[1].Err)
	require.Error(t, answers[2].Err, "a quantity past int32 is refused, not wrapped")
	require.NoError(t, answers[3].Err)
	require.True(t, answers[3].Created)
	require.Equal(t, int64(2), lobbyRows(t, st, sale.ID))
}

// A buyer's entry is read by the primary key however the lobby grew since
// the connection first read one (GET /lobby/me, polled by every entrant).
func TestLobbyEntryOf_ALobbyThatGrewFastIsNeverScannedWhole(t *testing.T) {
	t.Parallel()
	st, _ := countingStore(t, 1) // one connection, as the batches' test
	sale := lobbyShoes(t, st)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	for i := range 3 {
		_, _, err := st.Enter(t.Context(), sale.ID, "small-"+strconv.Itoa(i), item)
		require.NoError(t, err)
	}
	require.NoError(t, st.Gorm().Exec(`ANALYZE lobby_entries`).Error)
	for range 8 {
		_, err := st.LobbyEntryOf(t.Context(), sale.ID, "small-1")
		require.NoError(t, err)
	}
	require.NoError(t, st.Gorm().Exec(`INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
		SELECT ?, 'grown-' || g, decode(md5(g::text), 'hex'), 'eu-42', 1 FROM generate_series(1, 20000) g`, sale.ID).Error)
	seq0, idx0 := scans(t, st)
	e, err := st.LobbyEntryOf(t.Context(), sale.ID, "grown-19999")
	require.NoError(t, err)
	require.Equal(t, "grown-19999", e.UserID)
	seq, idx := scans(t, st)
	require.Greater(t, idx, idx0, "read by index")
	require.Equal(t, seq0, seq, "the lobby is not scanned whole")
}

// Two batches holding the same buyers in other orders (two API processes,
// a retry) do not deadlock: each buyer gets one entry, both batches are
// answered.
func TestEnterBatch_TwoBatchesOfTheSameBuyersDoNotDeadlock(t *testing.T) {
	t.Parallel()
	st, _ := testenv.Store(t)
	sale := lobbyShoes(t, st)
	// Slow inserts, so that the two statements interleave.
	require.NoError(t, st.Gorm().Exec(`CREATE FUNCTION slow_entry() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$`).Error)
	require.NoError(t, st.Gorm().Exec(`CREATE TRIGGER slow_entry BEFORE INSERT ON lobby_entries FOR EACH ROW EXECUTE FUNCTION slow_entry()`).Error)
	item := seckill.Item{SKU: "eu-42", Quantity: 1}
	one := []store.EntryAsked{{UserID: "u1", Item: item}, {UserID: "u2", Item: item}, {UserID: "u3", Item: item}}
	other := []store.EntryAsked{{UserID: "u3", Item: item}, {UserID: "u2", Item: item}, {UserID: "u1", Item: item}}
	var (
		wg   sync.WaitGroup
		a, b []store.EntryAnswer
	)
	wg.Add(2)
	go func() { defer wg.Done(); a = st.EnterBatch(t.Context(), sale.ID, one) }()
	go func() { defer wg.Done(); b = st.EnterBatch(t.Context(), sale.ID, other) }()
	wg.Wait()
	created := 0
	for _, ans := range append(a, b...) {
		require.NoError(t, ans.Err)
		if ans.Created {
			created++
		}
	}
	require.Equal(t, 3, created, "each buyer's entry made once")
	require.Equal(t, int64(3), lobbyRows(t, st, sale.ID))
}
