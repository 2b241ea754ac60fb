package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/draw"
)

type lobbyEntryRow struct {
	SaleID    int64
	UserID    string
	Entry     []byte
	SKU       string `gorm:"column:sku"`
	Quantity  int
	EnteredAt time.Time `gorm:"->"`
	Rank      *int
	Fits      *bool
	Outcome   *string
	OrderID   *int64
}

func (lobbyEntryRow) TableName() string { return "lobby_entries" }

// LobbyEntry is a buyer's entry in a sale's lobby and the item it asks
// for: the draw admits it when its variant still has its quantity.
type LobbyEntry = seckill.LobbyEntry

func (r *lobbyEntryRow) entry() *LobbyEntry {
	e := &LobbyEntry{SaleID: r.SaleID, UserID: r.UserID, Entry: r.Entry, Item: seckill.Item{SKU: r.SKU, Quantity: r.Quantity}}
	if r.Rank != nil {
		e.Rank = *r.Rank
	}
	if r.Fits != nil {
		e.Fits = *r.Fits
	}
	if r.Outcome != nil {
		e.Outcome = *r.Outcome
	}
	if r.OrderID != nil {
		e.OrderID = *r.OrderID
	}
	return e
}

func entries(rows []lobbyEntryRow) []*LobbyEntry {
	out := make([]*LobbyEntry, len(rows))
	for i := range rows {
		out[i] = rows[i].entry()
	}
	return out
}

// Enter puts userID in the sale's lobby with a fresh random entry asking
// for item (the zero Item: seckill.DefaultItem), or returns the entry the
// user already has (created false), with the item it was made with, which
// may differ from item: one entry per buyer, the caller tells a repeat
// from another request. An entry is taken only while the draw is OPEN and
// before starts_at, under a share lock on the sale's row: the draw closes
// the lobby by updating that row, so it waits for every entry in flight
// and no entry lands after the draw has read the lobby.
// seckill.ErrLobbyClosed otherwise; ErrVariantNotFound when the sale has
// no variant item.SKU.
//
// Concurrent entries are committed together (entrycommit.go); each
// caller is answered once its own entry is committed.
func (s *Store) Enter(ctx context.Context, saleID int64, userID string, item seckill.Item) (entry *LobbyEntry, created bool, err error) {
	return s.entries.enter(&entryRequest{ctx: ctx, saleID: saleID, userID: userID, item: item})
}

// enterOne is Enter for one buyer alone.
func (s *Store) enterOne(ctx context.Context, saleID int64, userID string, item seckill.Item) (entry *LobbyEntry, created bool, err error) {
	item = item.OrDefault()
	// One statement, one round trip and one commit (PostgreSQL commits
	// concurrent entries together): the share lock on the sale's row, the
	// lobby's state on the database's clock, the entry the user has, and
	// the insert of a fresh one when they have none and the lobby is open.
	var r struct {
		Open                      *bool
		NewEntry, PrevEntry       []byte
		NewSKU, PrevSKU           *string
		NewQuantity, PrevQuantity *int
		PrevRank                  *int
		PrevFits                  *bool
		PrevOutcome               *string
		PrevOrderID               *int64
	}
	err = s.db.WithContext(ctx).Raw(`WITH s AS (
			SELECT draw_state = ? AND now() < starts_at AS open FROM sales WHERE id = ? FOR SHARE
		), prev AS (
			SELECT entry, sku, quantity, rank, fits, outcome, order_id FROM lobby_entries WHERE sale_id = ? AND user_id = ?
		), ins AS (
			INSERT INTO lobby_entries (sale_id, user_id, entry, sku, quantity)
			SELECT ?, ?, ?, ?, ? FROM s WHERE s.open AND NOT EXISTS (SELECT 1 FROM prev)
			ON CONFLICT DO NOTHING
			RETURNING entry, sku, quantity
		)
		SELECT (SELECT open FROM s) AS open,
			i.entry AS new_entry, i.sku AS new_sku, i.quantity AS new_quantity,
			p.entry AS prev_entry, p.sku AS prev_sku, p.quantity AS prev_quantity,
			p.rank AS prev_rank, p.fits AS prev_fits, p.outcome AS prev_outcome, p.order_id AS prev_order_id
		FROM (SELECT 1) one LEFT JOIN ins i ON true LEFT JOIN prev p ON true`,
		seckill.DrawOpen, saleID, saleID, userID, saleID, userID, draw.NewEntry(), item.SKU, item.Quantity).Scan(&r).Error
	switch {
	case isForeignKeyViolation(err, "lobby_entries_variant_fkey"):
		return nil, false, fmt.Errorf("enter the lobby of sale %d: sale %d has no variant %q: %w", saleID, saleID, item.SKU, ErrVariantNotFound)
	case err != nil:
		return nil, false, fmt.Errorf("enter the lobby of sale %d: %w", saleID, err)
	case r.NewEntry != nil:
		row := lobbyEntryRow{SaleID: saleID, UserID: userID, Entry: r.NewEntry, SKU: *r.NewSKU, Quantity: *r.NewQuantity}
		return row.entry(), true, nil
	case r.PrevEntry != nil:
		row := lobbyEntryRow{SaleID: saleID, UserID: userID, Entry: r.PrevEntry, SKU: *r.PrevSKU, Quantity: *r.PrevQuantity,
			Rank: r.PrevRank, Fits: r.PrevFits, Outcome: r.PrevOutcome, OrderID: r.PrevOrderID}
		return row.entry(), false, nil
	case r.Open == nil || !*r.Open:
		return nil, false, seckill.ErrLobbyClosed
	}
	// Two first entries of one user at once: this one's insert met the
	// other's row, committed after this statement's snapshot. Its entry
	// is the user's.
	e, err := s.LobbyEntryOf(ctx, saleID, userID)
	if err != nil {
		return nil, false, fmt.Errorf("enter the lobby of sale %d: %w", saleID, err)
	}
	return e, false, nil
}

// LobbyEntryOf returns userID's entry in the sale's lobby, with its item;
// ErrNotFound when the user never entered.
func (s *Store) LobbyEntryOf(ctx context.Context, saleID int64, userID string) (*LobbyEntry, error) {
	// Planned at each read (freshPlan): every entrant polls this, and a
	// plan cached while the lobby was small reads the whole lobby.
	row := lobbyEntryRow{SaleID: saleID, UserID: userID}
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT entry, sku, quantity, entered_at, rank, fits, outcome, order_id
			FROM lobby_entries WHERE sale_id = $1 AND user_id = $2`, pgx.QueryExecModeExec, saleID, userID).
			Scan(&row.Entry, &row.SKU, &row.Quantity, &row.EnteredAt, &row.Rank, &row.Fits, &row.Outcome, &row.OrderID)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read the lobby entry of %s in sale %d: %w", userID, saleID, unavailable(err))
	}
	return row.entry(), nil
}

// DrawOf returns the sale's draw; ErrNotFound for a sale without a lobby.
func (s *Store) DrawOf(ctx context.Context, saleID int64) (*seckill.Draw, error) {
	var row struct {
		DrawSeed     []byte
		DrawState    *string
		DrawNextRank int
		DrawEntries  *int
		Through      *int `gorm:"column:draw_ranked_through"`
		DrawAdmitted *int
		DrawEndedAt  *int `gorm:"column:draw_ended_at_rank"`
		DrawnAt      *time.Time
		BeaconChain  *string    `gorm:"column:draw_beacon_chain"`
		BeaconRound  *int64     `gorm:"column:draw_beacon_round"`
		RoundAt      *time.Time `gorm:"column:draw_beacon_round_at"`
		Tree         []byte     `gorm:"column:draw_entries_tree"`
		Signature    []byte     `gorm:"column:draw_beacon_signature"`
		SignedAt     *time.Time `gorm:"column:draw_beacon_at"`
		CommittedAt  *time.Time `gorm:"column:draw_committed_at"`
	}
	err := s.db.WithContext(ctx).Raw(`SELECT draw_seed, draw_state, draw_next_rank, draw_entries, draw_ranked_through, draw_admitted, draw_ended_at_rank, drawn_at,
		draw_beacon_chain, draw_beacon_round, draw_beacon_round_at, draw_entries_tree, draw_beacon_signature, draw_beacon_at, draw_committed_at
		FROM sales WHERE id = ?`, saleID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && row.DrawState == nil) {
		return nil, seckill.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read the draw of sale %d: %w", saleID, err)
	}
	d := &seckill.Draw{SaleID: saleID, Seed: row.DrawSeed, State: *row.DrawState, NextRank: row.DrawNextRank, DrawnAt: utcPtr(row.DrawnAt),
		Beacon: beaconOf(row.BeaconChain, row.BeaconRound, row.RoundAt), Tree: row.Tree, BeaconSignature: row.Signature, BeaconAt: utcPtr(row.SignedAt), CommittedAt: utcPtr(row.CommittedAt)}
	if row.DrawEntries != nil {
		d.Entries = *row.DrawEntries
		d.RankedThrough = d.Entries // ranked before draw_ranked_through: every entry
	}
	if row.Through != nil {
		d.RankedThrough = *row.Through
	}
	if row.DrawAdmitted != nil {
		d.Admitted = *row.DrawAdmitted
	}
	if row.DrawEndedAt != nil {
		d.EndedAtRank = *row.DrawEndedAt
	}
	return d, nil
}

// CloseLobby ends the sale's lobby: from now on Enter refuses. It waits
// for the entries in flight (they hold a share lock on the sale's row),
// so every entry ever answered 201 is in the table when it returns.
// Idempotent: a lobby closed already stays as it is.
func (s *Store) CloseLobby(ctx context.Context, saleID int64) error {
	// The update takes the row's exclusive lock even when it changes
	// nothing, so it also waits for entries in flight after a retry.
	err := s.db.WithContext(ctx).Exec(`UPDATE sales SET draw_state = CASE WHEN draw_state = ? THEN ? ELSE draw_state END
		WHERE id = ?`, seckill.DrawOpen, seckill.DrawClosed, saleID).Error
	if err != nil {
		return fmt.Errorf("close the lobby of sale %d: %w", saleID, err)
	}
	return nil
}

// CommitEntries records the closed lobby's entries tree (draw.Tree,
// marshalled) and returns the one recorded: the first written stays, so a
// retry that built the same tree again changes nothing, and the root once
// published never changes. The lobby must be closed (CloseLobby).
func (s *Store) CommitEntries(ctx context.Context, saleID int64, tree []byte) ([]byte, error) {
	var kept []byte
	err := s.db.WithContext(ctx).Raw(`UPDATE sales SET draw_entries_tree = COALESCE(draw_entries_tree, ?),
		draw_committed_at = COALESCE(draw_committed_at, now())
		WHERE id = ? AND draw_state <> ? RETURNING draw_entries_tree`, tree, saleID, seckill.DrawOpen).Row().Scan(&kept)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("commit the entries of sale %d: its lobby is not closed", saleID)
	}
	if err != nil {
		return nil, fmt.Errorf("commit the entries of sale %d: %w", saleID, err)
	}
	return kept, nil
}

// SetBeaconSignature records the verified signature of the round the
// sale's draw waits for and returns the one recorded (the first written
// stays: a round has one signature), noting when it was first recorded.
func (s *Store) SetBeaconSignature(ctx context.Context, saleID int64, sig []byte) ([]byte, error) {
	var kept []byte
	err := s.db.WithContext(ctx).Raw(`UPDATE sales SET draw_beacon_signature = COALESCE(draw_beacon_signature, ?),
		draw_beacon_at = COALESCE(draw_beacon_at, now())
		WHERE id = ? AND draw_beacon_chain IS NOT NULL RETURNING draw_beacon_signature`, sig, saleID).Row().Scan(&kept)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("record the beacon of sale %d: its draw waits for no beacon", saleID)
	}
	if err != nil {
		return nil, fmt.Errorf("record the beacon of sale %d: %w", saleID, err)
	}
	return kept, nil
}

// ListedEntry is one line of a sale's lobby as the draw reads it and GET
// /draw/entries publishes it (`<entry hex> <sku> <quantity>`).
type ListedEntry = seckill.EntryLine

// LobbyEntries returns up to limit entries of the sale, with their items,
// after the entry after (nil: from the first), ascending by entry: how the
// draw reads the lobby in batches, and how GET /draw/entries publishes it.
func (s *Store) LobbyEntries(ctx context.Context, saleID int64, after []byte, limit int) ([]ListedEntry, error) {
	q := s.db.WithContext(ctx).Model(&lobbyEntryRow{}).Select("entry", "sku", "quantity").Where("sale_id = ?", saleID)
	if after != nil {
		q = q.Where("entry > ?", after)
	}
	var rows []lobbyEntryRow
	if err := q.Order("entry").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the lobby of sale %d: %w", saleID, err)
	}
	return listed(rows), nil
}

// ClosedLobby returns every entry of the sale's closed lobby with its
// item, ascending by entry: what the draw commits and ranks. One read in
// the table's own order, sorted here: read in the entries' order through
// their index, a lobby filled in seconds costs a random heap page a row
// (10,000 rows took 0.76 s, a million 2.9 to 9.7 s, against 0.7 s for
// the whole lobby in the table's order). The draw must commit a million
// entries well within the 10 s between starts_at and its beacon round.
func (s *Store) ClosedLobby(ctx context.Context, saleID int64) ([]ListedEntry, error) {
	var out []ListedEntry
	var arena []byte            // the entries' bytes, one allocation, not one an entry
	skus := map[string]string{} // one string a variant, not one a row
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		// The lobby is closed: its size is known before it is read, so
		// the lines are allocated once (appending a million lines would
		// hold the last two copies of them at once).
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM lobby_entries WHERE sale_id = $1`, pgx.QueryExecModeExec, saleID).Scan(&n); err != nil {
			return err
		}
		out = make([]ListedEntry, 0, n)
		arena = make([]byte, 0, n*draw.EntrySize)
		rows, err := conn.Query(ctx, `SELECT entry, sku, quantity FROM lobby_entries WHERE sale_id = $1`, pgx.QueryExecModeExec, saleID)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			entry    []byte
			sku      []byte
			quantity int
		)
		for rows.Next() {
			if err := rows.Scan(&entry, &sku, &quantity); err != nil {
				return err
			}
			name, ok := skus[string(sku)]
			if !ok {
				name = string(sku)
				skus[name] = name
			}
			// Were there more entries than counted, append would move on
			// to a new array; the lines before keep the old one.
			at := len(arena)
			arena = append(arena, entry...)
			out = append(out, ListedEntry{Entry: arena[at:len(arena):len(arena)], Item: seckill.Item{SKU: name, Quantity: quantity}})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read the lobby of sale %d: %w", saleID, unavailable(err))
	}
	slices.SortFunc(out, func(a, b ListedEntry) int { return bytes.Compare(a.Entry, b.Entry) })
	return out, nil
}

func listed(rows []lobbyEntryRow) []ListedEntry {
	out := make([]ListedEntry, len(rows))
	for i, r := range rows {
		out[i] = ListedEntry{Entry: r.Entry, Item: seckill.Item{SKU: r.SKU, Quantity: r.Quantity}}
	}
	return out
}

// LobbyEntriesFrom returns up to limit entries of the sale from the entry
// first on (inclusive), ascending by entry, with their items: one chunk
// of the entries' tree (draw.Tree.ChunkFirst), as an inclusion proof
// reads it.
func (s *Store) LobbyEntriesFrom(ctx context.Context, saleID int64, first []byte, limit int) ([]ListedEntry, error) {
	var rows []lobbyEntryRow
	err := s.db.WithContext(ctx).Model(&lobbyEntryRow{}).Select("entry", "sku", "quantity").
		Where("sale_id = ? AND entry >= ?", saleID, first).Order("entry").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the lobby of sale %d: %w", saleID, err)
	}
	return listed(rows), nil
}

// SetRanks writes the ranks of some entries (one batch of the draw), and
// whether each fits (draw.Ranked.Fits). Writing the same ranks again
// changes nothing.
func (s *Store) SetRanks(ctx context.Context, saleID int64, ranked []draw.Ranked) error {
	if len(ranked) == 0 {
		return nil
	}
	entries := make([][]byte, len(ranked))
	ranks := make([]int32, len(ranked))
	fits := make([]bool, len(ranked))
	for i, r := range ranked {
		entries[i], ranks[i], fits[i] = r.Entry, int32(r.Rank), r.Fits
	}
	// Three arrays, whatever the batch's size (not three parameters an
	// entry), planned at each call: the lobby grew by its whole size since
	// autovacuum last looked at it (see freshPlan).
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `UPDATE lobby_entries AS e SET rank = v.rank, fits = v.fits
			FROM unnest($1::bytea[], $2::int[], $3::boolean[]) AS v(entry, rank, fits)
			WHERE e.sale_id = $4 AND e.entry = v.entry
			AND (e.rank IS DISTINCT FROM v.rank OR e.fits IS DISTINCT FROM v.fits)`,
			pgx.QueryExecModeExec, entries, ranks, fits, saleID)
		return err
	})
	if err != nil {
		return fmt.Errorf("rank the lobby of sale %d: %w", saleID, unavailable(err))
	}
	return nil
}

// MarkRanked records the sale's draw ranked: its entries counted, ranks
// 1..through written (SetRanks), the rest to be written by RankRest.
func (s *Store) MarkRanked(ctx context.Context, saleID int64, entries, through int) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE sales SET draw_state = ?, draw_entries = ?, draw_ranked_through = ? WHERE id = ? AND draw_state IN (?, ?)`,
		seckill.DrawRanked, entries, through, saleID, seckill.DrawOpen, seckill.DrawClosed).Error
	if err != nil {
		return fmt.Errorf("mark the draw of sale %d ranked: %w", saleID, err)
	}
	return nil
}

// RankRest writes the ranks after the last one written, through upto,
// ranking inside PostgreSQL by the same order as draw.Rank (SHA-256(seed
// ‖ entry), then the entry), none of them fitting (RankDraw wrote every
// entry that fits); lost also settles them LOST and moves the draw's next
// rank past them, for entrants past the waitlist's bound. In one
// transaction, and only if PostgreSQL's order gives every rank already
// written the same rank (else nothing is written: the draw must never
// rank by two orders). Calling it again changes nothing. Returns the
// last rank written.
func (s *Store) RankRest(ctx context.Context, saleID int64, seed []byte, upto int, lost bool) (int, error) {
	var through int
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		var d struct {
			Through *int `gorm:"column:draw_ranked_through"`
			Entries *int `gorm:"column:draw_entries"`
		}
		if err := tx.Raw(`SELECT draw_ranked_through, draw_entries FROM sales WHERE id = ? AND draw_state = ? FOR NO KEY UPDATE`,
			saleID, seckill.DrawRanked).Scan(&d).Error; err != nil {
			return err
		}
		if d.Through == nil || d.Entries == nil {
			return fmt.Errorf("the draw of sale %d is not ranked, or ranked every entry", saleID)
		}
		through, upto = *d.Through, min(upto, *d.Entries)
		if upto <= through {
			return nil
		}
		outcome := any(nil)
		if lost {
			outcome = seckill.EntryLost
		}
		var r struct{ Differ, Had, Written int }
		// Rows of the range may have their rank already (an attempt of
		// an earlier release's RankDraw wrote every rank, then died before
		// recording it): kept, and given their outcome if lost.
		if err := tx.Raw(`WITH x AS MATERIALIZED (
				SELECT user_id, rank AS had, row_number() OVER (ORDER BY sha256(decode(?, 'hex') || entry), entry) AS r
				FROM lobby_entries WHERE sale_id = ?
			), differ AS (
				SELECT count(*) AS n FROM x WHERE had IS NOT NULL AND had <> r
			), written AS (
				UPDATE lobby_entries e SET rank = x.r, fits = false, outcome = COALESCE(?, e.outcome)
				FROM x WHERE e.sale_id = ? AND e.user_id = x.user_id AND x.r > ? AND x.r <= ?
				AND (x.had IS NULL OR (? AND e.outcome IS NULL))
				AND (SELECT n FROM differ) = 0
				RETURNING x.had
			)
			SELECT (SELECT n FROM differ) AS differ,
				(SELECT count(*) FROM x WHERE had IS NOT NULL AND r > ? AND r <= ?) AS had,
				(SELECT count(*) FROM written WHERE had IS NULL) AS written`,
			hex.EncodeToString(seed), saleID, outcome, saleID, through, upto, lost, through, upto).Scan(&r).Error; err != nil {
			return err
		}
		if r.Differ != 0 {
			return fmt.Errorf("the draw of sale %d: PostgreSQL's order gives %d of the ranks written another rank: nothing more is ranked", saleID, r.Differ)
		}
		if r.Had+r.Written != upto-through {
			return fmt.Errorf("the draw of sale %d: ranks %d..%d are %d entries, %d ranked", saleID, through+1, upto, upto-through, r.Had+r.Written)
		}
		next := "draw_next_rank"
		if lost {
			next = "GREATEST(draw_next_rank, @next)"
		}
		through = upto
		return tx.Exec(`UPDATE sales SET draw_ranked_through = @upto, draw_next_rank = `+next+` WHERE id = @sale`,
			map[string]any{"upto": upto, "next": upto + 1, "sale": saleID}).Error
	})
	if err != nil {
		return 0, fmt.Errorf("rank the rest of sale %d's lobby: %w", saleID, unavailable(err))
	}
	return through, nil
}

// EntriesFrom returns up to limit entries of the sale, with their items,
// from rank from on, in rank order.
func (s *Store) EntriesFrom(ctx context.Context, saleID int64, from, limit int) ([]*LobbyEntry, error) {
	var rows []lobbyEntryRow
	if err := s.db.WithContext(ctx).Where("sale_id = ? AND rank >= ?", saleID, from).
		Order("rank").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read ranks from %d of sale %d: %w", from, saleID, err)
	}
	return entries(rows), nil
}

// SettleEntries records the outcomes of a run of ranks and moves the
// draw's next rank past them, in one transaction: a draw stopped after
// it goes on from next.
func (s *Store) SettleEntries(ctx context.Context, saleID int64, settled []*seckill.LobbyEntry, next int) error {
	users := make([]string, len(settled))
	outcomes := make([]string, len(settled))
	orders := make([]*int64, len(settled))
	for i, e := range settled {
		users[i], outcomes[i] = e.UserID, e.Outcome
		if e.OrderID != 0 {
			orders[i] = &e.OrderID
		}
	}
	// One statement for the batch (a thousand round trips took a fifth of
	// a second a batch), planned afresh (freshPlan), then the next rank.
	err := s.freshPlan(ctx, func(conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE lobby_entries AS e SET outcome = v.outcome, order_id = v.order_id
				FROM unnest($2::text[], $3::text[], $4::bigint[]) AS v(user_id, outcome, order_id)
				WHERE e.sale_id = $1 AND e.user_id = v.user_id`, pgx.QueryExecModeExec, saleID, users, outcomes, orders); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE sales SET draw_next_rank = GREATEST(draw_next_rank, $1) WHERE id = $2`, pgx.QueryExecModeExec, next, saleID)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("settle ranks before %d of sale %d: %w", next, saleID, unavailable(err))
	}
	return nil
}

// FinishDraw records that the sale's draw is done: the seed may be
// published from now on.
func (s *Store) FinishDraw(ctx context.Context, saleID int64) error {
	// An entry that fits is LOST only when the sale had ended before the
	// draw reached it (SettleDraw): the first such rank is where the end
	// cut the draw.
	// Each variant's count of entries admitted is written with it, once.
	err := s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`UPDATE sale_variants v SET draw_admitted =
			(SELECT count(*) FROM lobby_entries e WHERE e.sale_id = v.sale_id AND e.sku = v.sku AND e.outcome = ?)
			WHERE v.sale_id = ?`, seckill.EntryWon, saleID).Error; err != nil {
			return err
		}
		return tx.Exec(`UPDATE sales SET draw_state = ?, drawn_at = COALESCE(drawn_at, now()),
			draw_admitted = (SELECT count(*) FROM lobby_entries WHERE sale_id = ? AND outcome = ?),
			draw_ended_at_rank = (SELECT min(rank) FROM lobby_entries WHERE sale_id = ? AND outcome = ? AND fits)
			WHERE id = ?`, seckill.DrawDone, saleID, seckill.EntryWon, saleID, seckill.EntryLost, saleID).Error
	})
	if err != nil {
		return fmt.Errorf("finish the draw of sale %d: %w", saleID, err)
	}
	return nil
}

// FreezeDrawStock fixes the units the sale's draw gives, per variant: each
// variant's total when first called (restocks wait for the draw), the
// same on every later call. The draw decides which entries fit from them.
func (s *Store) FreezeDrawStock(ctx context.Context, saleID int64) (map[string]int64, error) {
	var rows []struct {
		SKU       string `gorm:"column:sku"`
		DrawStock int64
	}
	if err := s.db.WithContext(ctx).Raw(`UPDATE sale_variants SET draw_stock = COALESCE(draw_stock, total)
		WHERE sale_id = ? RETURNING sku, draw_stock`, saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("fix the stock of sale %d's draw: %w", saleID, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("fix the stock of sale %d's draw: %w", saleID, seckill.ErrNotFound)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.SKU] = r.DrawStock
	}
	return out, nil
}

// DrawVariants returns, per variant of the sale in its order, the units
// its draw gave and the entries it admitted (WON), as FinishDraw recorded
// them (0 before).
func (s *Store) DrawVariants(ctx context.Context, saleID int64) ([]seckill.DrawVariant, error) {
	var rows []struct {
		SKU       string `gorm:"column:sku"`
		DrawStock *int64
		Admitted  int
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT sku, draw_stock, COALESCE(draw_admitted, 0) AS admitted
		FROM sale_variants WHERE sale_id = ? ORDER BY position`, saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the draw's variants of sale %d: %w", saleID, err)
	}
	out := make([]seckill.DrawVariant, len(rows))
	for i, r := range rows {
		out[i] = seckill.DrawVariant{SKU: r.SKU, Admitted: r.Admitted}
		if r.DrawStock != nil {
			out[i].Stock = *r.DrawStock
		}
	}
	return out, nil
}

// NextFitRank returns the first rank from from on of an entry that fits
// (0: none is left).
func (s *Store) NextFitRank(ctx context.Context, saleID int64, from int) (int, error) {
	var rank *int
	if err := s.db.WithContext(ctx).Raw(`SELECT min(rank) FROM lobby_entries WHERE sale_id = ? AND rank >= ? AND fits`,
		saleID, from).Scan(&rank).Error; err != nil {
		return 0, fmt.Errorf("find the next rank that fits in sale %d: %w", saleID, err)
	}
	if rank == nil {
		return 0, nil
	}
	return *rank, nil
}

// DrawOrders returns the orders the sale's draw gave, by rank.
func (s *Store) DrawOrders(ctx context.Context, saleID int64) ([]seckill.DrawOrder, error) {
	var rows []struct {
		OrderID  int64
		Entry    []byte
		Rank     *int
		SKU      string `gorm:"column:sku"`
		Quantity int
	}
	// The orders the draw admitted (orders.drawn) whoever holds them, and
	// the orders its record gives the winners (written or not yet): an
	// admission the record missed is listed too, with its buyer's entry
	// and rank, so the verifier sees it; one without an entry is listed
	// without one.
	// The item is the order's, or the entry's for an order not written.
	if err := s.db.WithContext(ctx).Raw(`SELECT o.id AS order_id, e.entry, e.rank, o.sku, o.quantity FROM orders o
		LEFT JOIN lobby_entries e ON e.sale_id = o.sale_id AND e.user_id = o.user_id
		WHERE o.sale_id = ? AND o.drawn
		UNION
		SELECT e.order_id, e.entry, e.rank, COALESCE(o.sku, e.sku), COALESCE(o.quantity, e.quantity) FROM lobby_entries e
		LEFT JOIN orders o ON o.id = e.order_id
		WHERE e.sale_id = ? AND e.outcome = ? AND e.order_id IS NOT NULL
		ORDER BY rank NULLS LAST, order_id`, saleID, saleID, seckill.EntryWon).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the draw's orders of sale %d: %w", saleID, err)
	}
	out := make([]seckill.DrawOrder, len(rows))
	for i, r := range rows {
		out[i] = seckill.DrawOrder{OrderID: r.OrderID, Entry: r.Entry, Item: seckill.Item{SKU: r.SKU, Quantity: r.Quantity}}
		if r.Rank != nil {
			out[i].Rank = *r.Rank
		}
	}
	return out, nil
}

// UnwrittenDrawOrders returns the sale's entrants told an order (won, or
// served from the waitlist) that has no row, by rank, with the items the
// orders are of: admissions Redis lost before their saga wrote them.
func (s *Store) UnwrittenDrawOrders(ctx context.Context, saleID int64) ([]*LobbyEntry, error) {
	var rows []lobbyEntryRow
	if err := s.db.WithContext(ctx).Raw(`SELECT e.* FROM lobby_entries e LEFT JOIN orders o ON o.id = e.order_id
		WHERE e.sale_id = ? AND e.order_id IS NOT NULL AND o.id IS NULL ORDER BY e.rank`, saleID).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the unwritten orders of sale %d's draw: %w", saleID, err)
	}
	return entries(rows), nil
}

// LobbySales returns the ids of the sales whose draw is not DONE, for the
// worker to make sure each has its draw workflow.
func (s *Store) LobbySales(ctx context.Context) ([]int64, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Model(&saleRow{}).Where("draw_state IS NOT NULL AND draw_state <> ?", seckill.DrawDone).
		Order("id").Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("list the sales with a draw to run: %w", err)
	}
	return ids, nil
}

// LoseRanks records ranks from..to as LOST (past the units and the
// waitlist's bound) and moves the draw's next rank past them, in one
// transaction.
func (s *Store) LoseRanks(ctx context.Context, saleID int64, from, to int) error {
	return s.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Exec(`UPDATE lobby_entries SET outcome = ? WHERE sale_id = ? AND rank BETWEEN ? AND ?`,
			seckill.EntryLost, saleID, from, to).Error; err != nil {
			return fmt.Errorf("settle ranks %d-%d of sale %d as lost: %w", from, to, saleID, err)
		}
		return tx.Exec(`UPDATE sales SET draw_next_rank = GREATEST(draw_next_rank, ?) WHERE id = ?`, to+1, saleID).Error
	})
}

// OrdersOfEach returns, for each of users who has an order of the sale,
// that order's id: an active one if the user has one, else the latest.
// While a draw runs claims are held, so each such order is the draw's (or
// the waitlist's, which serves only entrants the draw queued): a step of
// the draw retried after it admitted a winner finds that winner's order
// here even once it closed (a cancel, a failed payment), and does not
// admit them a second time. (orders.drawn is not asked: an admission made
// again after Redis lost it (rewarm.lua), or recorded before admissions
// carried the draw's mark, is not marked drawn.)
func (s *Store) OrdersOfEach(ctx context.Context, saleID int64, users []string) (map[string]int64, error) {
	out := make(map[string]int64)
	if len(users) == 0 {
		return out, nil
	}
	var rows []struct {
		UserID string
		ID     int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT ON (user_id) user_id, id FROM orders
		WHERE sale_id = ? AND user_id IN ?
		ORDER BY user_id, (status <> ?) DESC, id DESC`, saleID, users, seckill.StatusClosed).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the orders of %d entrants of sale %d: %w", len(users), saleID, err)
	}
	for _, r := range rows {
		out[r.UserID] = r.ID
	}
	return out, nil
}
