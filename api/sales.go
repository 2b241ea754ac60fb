package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

var errNoSale = seckill.Errorf(seckill.CodeSaleNotFound, "no such sale")

type createSaleRequest struct {
	Name                  *string `json:"name"`
	PriceCents            *int64  `json:"price_cents"`
	Currency              *string `json:"currency"`
	Stock                 *int64  `json:"stock"`
	StartsAt              *string `json:"starts_at"` // RFC 3339, parsed in validate to name the field
	EndsAt                *string `json:"ends_at"`
	PaymentTimeoutSeconds *int64  `json:"payment_timeout_seconds"`
	StockSegments         *int64  `json:"stock_segments"`
	LobbyOpensAt          *string `json:"lobby_opens_at"`
	ProofOfWork           *struct {
		Difficulty *int64 `json:"difficulty"`
	} `json:"proof_of_work"`
	Variants      []variantRequest `json:"variants"`
	LimitPerBuyer *int64           `json:"limit_per_buyer"`
	Presale       *presaleRequest  `json:"presale"`
}

// variantRequest is one of a sale's variants (docs/API.md "Variants").
type variantRequest struct {
	SKU        *string `json:"sku"`
	Name       *string `json:"name"`
	PriceCents *int64  `json:"price_cents"`
	Stock      *int64  `json:"stock"`
}

func invalid(field, format string, args ...any) error {
	return seckill.Errorf(seckill.CodeInvalidRequest, "%s: %s", field, fmt.Sprintf(format, args...))
}

// decodeJSON decodes body into v, naming the offending field on error.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return seckill.Errorf(seckill.CodeInvalidRequest, "body: a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr):
			return invalid(typeErr.Field, "must be %s", jsonKind(typeErr.Type.Kind()))
		default:
			return seckill.Errorf(seckill.CodeInvalidRequest, "body: malformed JSON")
		}
	}
	if dec.More() {
		return seckill.Errorf(seckill.CodeInvalidRequest, "body: a single JSON object is required")
	}
	return nil
}

// jsonKind names what a Go kind is in JSON, for a shopkeeper's error.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number (e.g. 990 for 9.90 in cents)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return "a " + k.String()
}

// parseTime reads an RFC 3339 time field.
func parseTime(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalid(field, "must be an RFC 3339 time such as 2026-11-22T10:00:00Z, got %q", v)
	}
	return t, nil
}

func (r *createSaleRequest) validate(now time.Time) (seckill.NewSale, error) {
	var n seckill.NewSale
	switch {
	case r.Name == nil:
		return n, invalid("name", "is required")
	case r.Variants != nil && (r.PriceCents != nil || r.Stock != nil):
		return n, invalid("variants", "give either variants or the top-level price_cents and stock, not both")
	case r.Variants == nil && r.PriceCents == nil:
		return n, invalid("price_cents", "is required")
	case r.Variants == nil && r.Stock == nil:
		return n, invalid("stock", "is required")
	case r.StartsAt == nil:
		return n, invalid("starts_at", "is required")
	case r.EndsAt == nil:
		return n, invalid("ends_at", "is required")
	}
	name := strings.TrimSpace(*r.Name)
	if name == "" || utf8.RuneCountInString(name) > seckill.MaxSaleNameLength || !utf8.ValidString(name) {
		return n, invalid("name", "must be 1-%d characters", seckill.MaxSaleNameLength)
	}
	variants, err := r.variants(name)
	if err != nil {
		return n, err
	}
	limit := int64(seckill.DefaultLimitPerBuyer)
	if r.LimitPerBuyer != nil {
		limit = *r.LimitPerBuyer
	}
	if limit < 1 || limit > seckill.MaxLimitPerBuyer {
		return n, invalid("limit_per_buyer", "must be between 1 and %d", seckill.MaxLimitPerBuyer)
	}
	// An order's amount (quantity x price) must stay an exact whole number
	// in JSON and in Redis' Lua numbers: at most 2^53.
	for i, v := range variants {
		if v.PriceCents > (1<<53)/limit {
			field := "price_cents"
			if r.Variants != nil {
				field = fmt.Sprintf("variants[%d].price_cents", i)
			}
			return n, invalid(field, "times limit_per_buyer (%d) must be at most 2^53", limit)
		}
	}
	currency := seckill.DefaultCurrency
	if r.Currency != nil {
		currency = strings.ToLower(*r.Currency)
		if len(currency) != 3 || strings.Trim(currency, "abcdefghijklmnopqrstuvwxyz") != "" {
			return n, invalid("currency", "must be a three-letter ISO 4217 code")
		}
	}
	timeout := int64(seckill.DefaultPaymentTimeoutSeconds)
	if r.PaymentTimeoutSeconds != nil {
		timeout = *r.PaymentTimeoutSeconds
	}
	if timeout < int64(seckill.MinPaymentTimeout/time.Second) || timeout > int64(seckill.MaxPaymentTimeout/time.Second) {
		return n, invalid("payment_timeout_seconds", "must be between 5 and 86400")
	}
	segments := int64(1)
	if r.StockSegments != nil {
		segments = *r.StockSegments
	}
	if segments < 1 || segments > seckill.MaxStockSegments {
		return n, invalid("stock_segments", "must be between 1 and %d", seckill.MaxStockSegments)
	}
	startsAt, err := parseTime("starts_at", *r.StartsAt)
	if err != nil {
		return n, err
	}
	endsAt, err := parseTime("ends_at", *r.EndsAt)
	if err != nil {
		return n, err
	}
	if !endsAt.After(startsAt) {
		return n, invalid("ends_at", "must be after starts_at")
	}
	if !endsAt.After(now) {
		return n, invalid("ends_at", "is in the past (%s): a sale must end in the future", endsAt.UTC().Format(time.RFC3339))
	}
	var lobby *time.Time
	if r.LobbyOpensAt != nil {
		at, err := parseTime("lobby_opens_at", *r.LobbyOpensAt)
		if err != nil {
			return n, err
		}
		if !at.Before(startsAt) {
			return n, invalid("lobby_opens_at", "must be before starts_at")
		}
		if !startsAt.After(now) {
			return n, invalid("lobby_opens_at", "a sale with a lobby must start in the future, after its lobby (starts_at is %s)", startsAt.UTC().Format(time.RFC3339))
		}
		at = at.UTC().Truncate(time.Millisecond)
		lobby = &at
	}
	presale, err := r.Presale.presale(startsAt, lobby != nil)
	if err != nil {
		return n, err
	}
	difficulty := 0
	if r.ProofOfWork != nil {
		if r.ProofOfWork.Difficulty == nil {
			return n, invalid("proof_of_work.difficulty", "is required")
		}
		d := *r.ProofOfWork.Difficulty
		if d < seckill.MinProofDifficulty || d > seckill.MaxProofDifficulty {
			return n, invalid("proof_of_work.difficulty", "must be between %d and %d", seckill.MinProofDifficulty, seckill.MaxProofDifficulty)
		}
		difficulty = int(d)
	}
	return seckill.NewSale{
		Name:            name,
		Currency:        currency,
		Variants:        variants,
		LimitPerBuyer:   int(limit),
		StartsAt:        startsAt.UTC().Truncate(time.Millisecond),
		EndsAt:          endsAt.UTC().Truncate(time.Millisecond),
		PaymentTimeout:  time.Duration(timeout) * time.Second,
		StockSegments:   int(segments),
		LobbyOpensAt:    lobby,
		ProofDifficulty: difficulty,
		Presale:         presale,
	}, nil
}

// variants are the sale's variants: those given, or the one variant
// "default" of a body without them (v3), named as the sale.
func (r *createSaleRequest) variants(saleName string) ([]seckill.NewVariant, error) {
	if r.Variants == nil {
		v := seckill.NewVariant{SKU: seckill.DefaultSKU, Name: saleName, PriceCents: *r.PriceCents, Stock: *r.Stock}
		return []seckill.NewVariant{v}, checkVariant("", v)
	}
	if len(r.Variants) < 1 || len(r.Variants) > seckill.MaxVariants {
		return nil, invalid("variants", "must hold 1-%d variants", seckill.MaxVariants)
	}
	out := make([]seckill.NewVariant, len(r.Variants))
	seen := make(map[string]bool, len(r.Variants))
	for i, v := range r.Variants {
		field := fmt.Sprintf("variants[%d]", i)
		switch {
		case v.SKU == nil:
			return nil, invalid(field+".sku", "is required")
		case v.Name == nil:
			return nil, invalid(field+".name", "is required")
		case v.PriceCents == nil:
			return nil, invalid(field+".price_cents", "is required")
		case v.Stock == nil:
			return nil, invalid(field+".stock", "is required")
		case seen[*v.SKU]:
			return nil, invalid(field+".sku", "%q is given twice; skus are unique in a sale", *v.SKU)
		}
		seen[*v.SKU] = true
		out[i] = seckill.NewVariant{SKU: *v.SKU, Name: strings.TrimSpace(*v.Name), PriceCents: *v.PriceCents, Stock: *v.Stock}
		if err := checkVariant(field+".", out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkVariant checks one variant's fields, named with prefix.
func checkVariant(prefix string, v seckill.NewVariant) error {
	switch {
	case !seckill.ValidSKU(v.SKU):
		return invalid(prefix+"sku", "must be 1-%d of A-Z, a-z, 0-9, '.', '_' and '-'", seckill.MaxSKULength)
	case v.Name == "" || utf8.RuneCountInString(v.Name) > seckill.MaxVariantNameLength || !printable(v.Name):
		return invalid(prefix+"name", "must be 1-%d printable characters", seckill.MaxVariantNameLength)
	case v.PriceCents < 0 || v.PriceCents > 1<<53:
		return invalid(prefix+"price_cents", "must be between 0 and 2^53")
	case v.Stock < 1 || v.Stock > seckill.MaxStock:
		return invalid(prefix+"stock", "must be between 1 and %d", seckill.MaxStock)
	}
	return nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// createSale stores the sale and warms its stock into Redis inside the same
// database transaction: the 201 means both happened, an error means neither
// is visible.
// MinDrawTime is how long a sale with a lobby must last past its draw's
// beacon round, at least, for the draw to admit its winners.
const MinDrawTime = time.Minute

func (s *Server) createSale(c *fiber.Ctx) error {
	var req createSaleRequest
	if err := decodeJSON(c.Body(), &req); err != nil {
		return err
	}
	n, err := req.validate(time.Now())
	if err != nil {
		return err
	}
	if n.LobbyOpensAt != nil && s.cfg.Beacon != nil {
		round := s.cfg.Beacon.DrawRound(n.StartsAt)
		n.Beacon = &seckill.DrawBeacon{Chain: s.cfg.Beacon.Hash, Round: round, RoundAt: s.cfg.Beacon.RoundTime(round)}
		// The draw admits nobody once the sale has ended: it must end
		// after the draw can run.
		if !n.EndsAt.After(n.Beacon.RoundAt.Add(MinDrawTime)) {
			return invalid("ends_at", "must be at least %s after the draw's beacon round (due %s, 10 to 13 s after starts_at)",
				MinDrawTime, n.Beacon.RoundAt.Format(time.RFC3339))
		}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	var warmErr error
	sale, err := s.cfg.Store.CreateSale(ctx, n, func(sale *seckill.Sale) error {
		units := make(map[string]int64, len(sale.Variants))
		for _, v := range sale.Variants {
			units[v.SKU] = v.Stock.Available
		}
		_, warmErr = s.cfg.Redis.Warm(ctx, seckill.WarmSpecOf(sale, units))
		return warmErr
	})
	if warmErr != nil {
		s.logFor(c).Error("warm sale", "error", warmErr)
		return seckill.Errorf(seckill.CodeUnavailable, "stock could not be loaded into Redis; nothing was created")
	}
	if err != nil {
		return err
	}
	s.sales.put(sale)
	s.logFor(c).Info("sale created", "saleID", sale.ID, "stock", sale.Stock.Total,
		"startsAt", sale.StartsAt, "endsAt", sale.EndsAt)
	if sale.LobbyOpensAt != nil {
		// Its draw waits in Temporal for starts_at. Should this start fail,
		// the worker's reconciliation starts it (every sale whose draw is
		// not done has one).
		if err := s.cfg.Sagas.StartDraw(ctx, seckill.DrawInput{SaleID: sale.ID, StartsAt: sale.StartsAt, WaitlistMax: s.cfg.WaitlistMax}); err != nil {
			s.logFor(c).Warn("start the draw; reconciliation will", "saleID", sale.ID, "error", err)
		}
	}
	for i := range sale.Variants {
		sale.Variants[i].Stock.Remaining = sale.Variants[i].Stock.Total
	}
	sale.SumVariants()
	c.Location("/api/v1/sales/" + strconv.FormatInt(sale.ID, 10))
	return c.Status(fiber.StatusCreated).JSON(sale.JSON(time.Now()))
}

func (s *Server) getSale(c *fiber.Ctx) error {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return errNoSale
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	err := s.answerSale(ctx, c, id)
	if isNotFound(err) {
		return errNoSale
	}
	return err
}

// waitlistOf is a sold-out sale's line, read only then: while units
// remain a join is admitted whatever the line. nil when Redis does not
// answer: the shop offers the join, and the join's answer says.
func (s *Server) waitlistOf(ctx context.Context, saleID int64) *seckill.WaitlistJSON {
	n, err := s.cfg.Redis.Waiting(ctx, saleID)
	if err != nil {
		s.cfg.Log.Warn("count the waitlist", "saleID", saleID, "error", err)
		return nil
	}
	return &seckill.WaitlistJSON{Waiting: n, Max: s.cfg.WaitlistMax}
}

type saleList struct {
	Sales []seckill.SaleJSON `json:"sales"`
	// NextBefore pages on: pass it as ?before= for the next (older) page.
	NextBefore *string `json:"next_before"`
}

func (s *Server) listSales(c *fiber.Ctx) error {
	limit := 50
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 200 {
			return invalid("limit", "must be an integer between 1 and 200")
		}
		limit = n
	}
	var before int64
	if b := c.Query("before"); b != "" {
		var ok bool
		if before, ok = parseID(b); !ok {
			return invalid("before", "must be a sale id")
		}
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	sales, err := s.cfg.Store.Sales(ctx, limit, before)
	if err != nil {
		return err
	}
	s.fillRemaining(ctx, sales)
	now := time.Now()
	out := saleList{Sales: make([]seckill.SaleJSON, len(sales))}
	for i, sale := range sales {
		out.Sales[i] = sale.JSON(now)
	}
	if len(sales) == limit {
		next := strconv.FormatInt(sales[len(sales)-1].ID, 10)
		out.NextBefore = &next
	}
	return c.JSON(out)
}

// fillRemaining reads the Redis counters of every variant in one round
// trip. A sale that is not warmed, or a Redis that does not answer, shows
// 0: no admission is possible then.
func (s *Server) fillRemaining(ctx context.Context, sales []*seckill.Sale) {
	ids := make([]int64, len(sales))
	for i, sale := range sales {
		ids[i] = sale.ID
	}
	remaining, err := s.cfg.Redis.RemainingByVariant(ctx, ids)
	if err != nil {
		s.cfg.Log.Warn("read remaining stock", "error", err)
	}
	for _, sale := range sales {
		for i := range sale.Variants {
			sale.Variants[i].Stock.Remaining = max(0, remaining[sale.ID][sale.Variants[i].SKU])
		}
		sale.SumVariants()
	}
}
