package api

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/beacon"
	"github.com/seckill/seckill/draw"
)

// The lobby and the draw (docs/API.md "Fair start").

const lobbyEntered = "ENTERED"

// enterLobby puts the caller in the sale's lobby: 201 with a fresh entry,
// 200 with the one they have.
func (s *Server) enterLobby(c *fiber.Ctx) (err error) {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.lobbySaleOf(ctx, c)
	if err != nil {
		return err
	}
	now := time.Now()
	if now.Before(*sale.LobbyOpensAt) {
		return seckill.Errorf(seckill.CodeLobbyNotOpen, "the lobby opens at %s", sale.LobbyOpensAt.Format(time.RFC3339))
	}
	if !now.Before(sale.StartsAt) {
		return errLobbyClosed
	}
	item, err := itemOf(c, &sale)
	if err != nil {
		return err
	}
	user := principal(c).UserID
	proof, err := s.takeProof(c, &sale, user, "")
	if err != nil {
		return err
	}
	// A database error gives the proof back: the retry finds the entry,
	// if it was made, and answers it again (200).
	defer func() { s.giveProofBack(c, proof, err) }()
	entry, created, err := s.cfg.Store.Enter(ctx, sale.ID, user, item)
	if errors.Is(err, seckill.ErrLobbyClosed) {
		return errLobbyClosed
	}
	if err != nil {
		return err
	}
	if !created && entry.Item.OrDefault() != item {
		return &seckill.Error{Code: seckill.CodeAlreadyEntered, Message: "you entered this sale's lobby for another variant or quantity; one entry per buyer",
			Entry: hex.EncodeToString(entry.Entry)}
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
		s.logFor(c).Info("lobby entered", "saleID", sale.ID)
	}
	return c.Status(status).JSON(seckill.LobbyEntryJSON{SaleID: strconv.FormatInt(sale.ID, 10), Status: lobbyEntered,
		Entry: hex.EncodeToString(entry.Entry), SKU: entry.Item.SKU, Quantity: entry.Item.Quantity})
}

// lobbySaleOf is the sale of the request's :id, NO_LOBBY when it has no
// lobby.
func (s *Server) lobbySaleOf(ctx context.Context, c *fiber.Ctx) (seckill.Sale, error) {
	sale, err := s.saleOf(ctx, c)
	if err == nil && sale.LobbyOpensAt == nil {
		err = errNoLobby
	}
	return sale, err
}

var (
	errNoLobby     = seckill.Errorf(seckill.CodeNoLobby, "this sale has no lobby")
	errLobbyClosed = seckill.Errorf(seckill.CodeLobbyClosed, "the lobby is closed: the sale has started")
)

// lobbyMe says where the caller's entry stands: ENTERED before the draw;
// WON (with the order), WAITING (with the place in line) or LOST after.
func (s *Server) lobbyMe(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sale, err := s.lobbySaleOf(ctx, c)
	if err != nil {
		return err
	}
	user := principal(c).UserID
	e, err := s.cfg.Store.LobbyEntryOf(ctx, sale.ID, user)
	if isNotFound(err) {
		return seckill.Errorf(seckill.CodeNotInLobby, "you did not enter this sale's lobby")
	}
	if err != nil {
		return err
	}
	// The entry, its sku and quantity in every answer: with the proof,
	// what a buyer checks their line in the draw with.
	it := e.Item.OrDefault()
	out := seckill.LobbyEntryJSON{Status: e.Outcome, Rank: e.Rank, Entry: hex.EncodeToString(e.Entry), SKU: it.SKU, Quantity: it.Quantity}
	if out.InclusionProof, err = s.inclusionProof(ctx, sale.ID, e); err != nil {
		// The outcome matters more than the proof: a winner still learns
		// their order; the proof comes with a later answer.
		s.logFor(c).Warn("inclusion proof", "saleID", sale.ID, "error", err)
		out.InclusionProof = nil
	}
	switch e.Outcome {
	case "":
		out.Status, out.Rank = lobbyEntered, 0
	case seckill.EntryWon:
		out.OrderID = strconv.FormatInt(e.OrderID, 10)
	case seckill.EntryWaiting:
		if e.OrderID != 0 { // served by the waitlist as the draw queued them
			out.Status, out.OrderID = seckill.EntryWon, strconv.FormatInt(e.OrderID, 10)
			break
		}
		// The waitlist may have given them a unit since.
		st, err := s.cfg.Redis.WaitStateOf(ctx, sale.ID, user)
		if err != nil {
			return errWaitlistPaused
		}
		switch {
		case st.OrderID != 0:
			out.Status, out.OrderID = seckill.EntryWon, strconv.FormatInt(st.OrderID, 10)
		case st.Waiting:
			out.Position = st.Position
		}
	}
	return c.JSON(out)
}

// inclusionProof is e's proof of inclusion in its sale's committed
// entries (nil before the lobby is committed): the tree's summary, kept
// once read (it never changes), and the one chunk of entries, or the few,
// the proof needs.
func (s *Server) inclusionProof(ctx context.Context, saleID int64, e *seckill.LobbyEntry) (*seckill.InclusionProofJSON, error) {
	t, err := s.entriesTree(ctx, saleID)
	if t == nil || err != nil {
		return nil, err
	}
	chunk := t.ChunkOf(e.Entry)
	if chunk < 0 {
		return nil, fmt.Errorf("entry %x of sale %d is not in its committed entries", e.Entry, saleID)
	}
	chunkOf := func(c int) (*draw.Chunk, error) {
		return s.chunks.get(saleID, c, func() (*draw.Chunk, error) {
			return t.ReadChunk(c, func(c int) ([][]byte, error) {
				batch, err := s.cfg.Store.LobbyEntriesFrom(ctx, saleID, t.ChunkFirst(c), t.ChunkSize())
				if err != nil {
					return nil, err
				}
				out := make([][]byte, len(batch))
				for i, l := range batch {
					it := l.Item.OrDefault()
					out[i] = draw.Line(l.Entry, it.SKU, it.Quantity)
				}
				return out, nil
			})
		})
	}
	ch, err := chunkOf(chunk)
	if err != nil {
		return nil, err
	}
	it := e.Item.OrDefault()
	index, ok := ch.IndexOf(draw.Line(e.Entry, it.SKU, it.Quantity))
	if !ok {
		return nil, fmt.Errorf("entry %x of sale %d is not in its committed entries", e.Entry, saleID)
	}
	path, err := t.ProofFrom(index, chunkOf)
	if err != nil {
		return nil, err
	}
	p := &seckill.InclusionProofJSON{LeafIndex: index, TreeSize: t.Size, AuditPath: make([]string, len(path))}
	for i, h := range path {
		p.AuditPath[i] = hex.EncodeToString(h)
	}
	return p, nil
}

// entriesTree is the sale's committed entries tree (nil: not committed
// yet), read once and kept: once committed it never changes.
func (s *Server) entriesTree(ctx context.Context, saleID int64) (*draw.Tree, error) {
	if t, ok := s.trees.Load(saleID); ok {
		return t.(*draw.Tree), nil
	}
	d, err := s.cfg.Store.DrawOf(ctx, saleID)
	if err != nil {
		return nil, err
	}
	return s.treeOf(d)
}

// treeOf is d's committed entries tree (nil: not committed yet),
// unmarshalled once per sale and kept.
func (s *Server) treeOf(d *seckill.Draw) (*draw.Tree, error) {
	if t, ok := s.trees.Load(d.SaleID); ok {
		return t.(*draw.Tree), nil
	}
	if d.Tree == nil {
		return nil, nil
	}
	t, err := draw.UnmarshalTree(d.Tree)
	if err != nil {
		return nil, fmt.Errorf("the entries tree of sale %d: %w", d.SaleID, err)
	}
	s.trees.Store(d.SaleID, t)
	return t, nil
}

// doneDraw is the sale's draw once done; DRAW_IN_PROGRESS (with a
// Retry-After) before, NO_LOBBY for a sale without one.
func (s *Server) doneDraw(ctx context.Context, c *fiber.Ctx) (*seckill.Draw, error) {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return nil, errNoSale
	}
	d, err := s.cfg.Store.DrawOf(ctx, id)
	if isNotFound(err) {
		if _, err := s.sales.get(ctx, id); isNotFound(err) {
			return nil, errNoSale
		}
		return nil, errNoLobby
	}
	if err != nil {
		return nil, err
	}
	if d.State != seckill.DrawDone {
		c.Set(fiber.HeaderRetryAfter, "5")
		return d, seckill.Errorf(seckill.CodeDrawInProgress, "the draw is not done: its seed is published when it is")
	}
	return d, nil
}

// getDraw publishes a done draw: the commitment, the seed it commits to,
// how many entered and how many were admitted, the rank where the sale's
// end cut it, if it did, and per variant the units it drew and the
// entries it admitted.
func (s *Server) getDraw(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	d, err := s.doneDraw(ctx, c)
	var inProgress *seckill.Error
	if errors.As(err, &inProgress) && inProgress.Code == seckill.CodeDrawInProgress && d != nil && d.Tree != nil {
		return s.committedDraw(c, d)
	}
	if err != nil {
		return err
	}
	vs, err := s.cfg.Store.DrawVariants(ctx, d.SaleID)
	if err != nil {
		return err
	}
	out := seckill.PublishedDrawJSON{Commitment: draw.Commitment(d.Seed), Seed: hex.EncodeToString(d.Seed), Entries: int64(d.Entries), Admitted: int64(d.Admitted), EndedAtRank: int64(d.EndedAtRank),
		Variants: make([]seckill.DrawVariantJSON, len(vs))}
	for i, v := range vs {
		out.Variants[i] = seckill.DrawVariantJSON{SKU: v.SKU, Stock: v.Stock, Admitted: int64(v.Admitted)}
	}
	t, err := s.treeOf(d)
	if err != nil {
		return err
	}
	if t != nil {
		out.EntriesRoot, out.CommittedAt = hex.EncodeToString(t.Root[:]), d.CommittedAt
	}
	if b := d.Beacon; b != nil {
		r := beacon.Randomness(d.BeaconSignature)
		out.Beacon = &seckill.BeaconRoundJSON{ChainHash: b.Chain, Round: b.Round,
			Signature: hex.EncodeToString(d.BeaconSignature), Randomness: hex.EncodeToString(r[:])}
	}
	return c.JSON(out)
}

// committedDraw answers GET /draw between the lobby's close and the
// draw's end: the entries' root and count, committed before the beacon
// round exists, and the round the ranks wait for. No seed yet.
func (s *Server) committedDraw(c *fiber.Ctx, d *seckill.Draw) error {
	t, err := s.treeOf(d)
	if err != nil {
		return err
	}
	out := seckill.CommittedDrawJSON{Commitment: draw.Commitment(d.Seed), EntriesRoot: hex.EncodeToString(t.Root[:]), Entries: int64(t.Size),
		CommittedAt: d.CommittedAt}
	if b := d.Beacon; b != nil {
		out.Beacon = &seckill.BeaconRoundJSON{ChainHash: b.Chain, Round: b.Round}
	}
	c.Response().Header.Del(fiber.HeaderRetryAfter)
	return c.JSON(out)
}

// drawEntries publishes every entry of a done draw, one line each,
// `<entry hex> <sku> <quantity>`, ascending by entry, read from the
// database in batches while it streams.
func (s *Server) drawEntries(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	d, err := s.doneDraw(ctx, c)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	st, saleID, log := s.cfg.Store, d.SaleID, s.logFor(c)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		var after []byte
		line := make([]byte, 0, 2*draw.EntrySize+seckill.MaxSKULength+8)
		for {
			rctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
			batch, err := st.LobbyEntries(rctx, saleID, after, 10_000)
			cancel()
			if err != nil {
				// The list is cut short: its count no longer matches the
				// draw's, which a verifier reports.
				log.Warn("publish the draw's entries", "saleID", saleID, "error", err)
				return
			}
			for _, e := range batch {
				it := e.Item.OrDefault()
				line = append(hex.AppendEncode(line[:0], e.Entry), ' ')
				line = append(append(line, it.SKU...), ' ')
				line = append(strconv.AppendInt(line, int64(it.Quantity), 10), '\n')
				if _, err := w.Write(line); err != nil {
					return
				}
			}
			if err := w.Flush(); err != nil || len(batch) < 10_000 {
				return
			}
			after = batch[len(batch)-1].Entry
		}
	})
	return nil
}

// drawOrders lists, for an admin, the orders a done draw gave, by rank,
// with the entry each was won by (store.DrawOrders: every order the draw
// admitted, whatever its record says).
func (s *Server) drawOrders(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	d, err := s.doneDraw(ctx, c)
	if err != nil {
		return err
	}
	orders, err := s.cfg.Store.DrawOrders(ctx, d.SaleID)
	if err != nil {
		return err
	}
	out := seckill.DrawOrdersJSON{Orders: make([]seckill.DrawOrderJSON, len(orders))}
	for i, o := range orders {
		out.Orders[i] = seckill.DrawOrderJSON{OrderID: strconv.FormatInt(o.OrderID, 10), Entry: hex.EncodeToString(o.Entry), Rank: int64(o.Rank),
			SKU: o.Item.SKU, Quantity: o.Item.Quantity}
	}
	return c.JSON(out)
}
