package seckill

import (
	"strconv"
	"time"
)

// Limits of a sale, from docs/API.md.
const (
	MaxStock                     = 10_000_000
	MinPaymentTimeout            = 5 * time.Second
	MaxPaymentTimeout            = 24 * time.Hour
	DefaultPaymentTimeoutSeconds = 900
	DefaultCurrency              = "usd"
	MaxSaleNameLength            = 200
	// MaxStockSegments bounds stock_segments: the parts a sale's Redis
	// stock is split into.
	MaxStockSegments = 64
)

// NewSale is what an admin creates (POST /api/v1/sales, validated).
type NewSale struct {
	Name           string
	PriceCents     int64
	Currency       string
	Stock          int64
	StartsAt       time.Time
	EndsAt         time.Time
	PaymentTimeout time.Duration
	// StockSegments is how many segments the Redis stock is split into
	// (0: 1).
	StockSegments int
}

// SaleState is derived from the clock and the stock, never stored.
type SaleState string

// Sale states of docs/API.md.
const (
	StateScheduled SaleState = "SCHEDULED"
	StateActive    SaleState = "ACTIVE"
	StateSoldOut   SaleState = "SOLD_OUT"
	StateEnded     SaleState = "ENDED"
)

// Sale is a flash sale: a fixed stock offered at one price in a time window.
type Sale struct {
	ID             int64
	Name           string
	PriceCents     int64
	Currency       string
	StartsAt       time.Time
	EndsAt         time.Time
	PaymentTimeout time.Duration
	// StockSegments is how many parts the Redis stock is split into (1..64).
	StockSegments int
	Stock         Stock
}

// Stock is the split of a sale's units. Total, Available, Locked and Sold
// come from Postgres (the authority); Remaining from the Redis counter.
type Stock struct {
	Total     int64 `json:"total"`
	Remaining int64 `json:"remaining"`
	Available int64 `json:"available"`
	Locked    int64 `json:"locked"`
	Sold      int64 `json:"sold"`
}

// State is the sale's state at now.
func (s *Sale) State(now time.Time) SaleState {
	switch {
	case now.Before(s.StartsAt):
		return StateScheduled
	case !now.Before(s.EndsAt):
		return StateEnded
	case s.Stock.Remaining <= 0:
		return StateSoldOut
	default:
		return StateActive
	}
}

// SaleJSON is the wire form of a Sale.
type SaleJSON struct {
	ID                    string    `json:"id"`
	Name                  string    `json:"name"`
	PriceCents            int64     `json:"price_cents"`
	Currency              string    `json:"currency"`
	StartsAt              time.Time `json:"starts_at"`
	EndsAt                time.Time `json:"ends_at"`
	PaymentTimeoutSeconds int64     `json:"payment_timeout_seconds"`
	StockSegments         int       `json:"stock_segments"`
	State                 SaleState `json:"state"`
	Stock                 Stock     `json:"stock"`
}

// JSON returns the wire form of s at now.
func (s *Sale) JSON(now time.Time) SaleJSON {
	return SaleJSON{
		ID:                    strconv.FormatInt(s.ID, 10),
		Name:                  s.Name,
		PriceCents:            s.PriceCents,
		Currency:              s.Currency,
		StartsAt:              s.StartsAt.UTC(),
		EndsAt:                s.EndsAt.UTC(),
		PaymentTimeoutSeconds: int64(s.PaymentTimeout / time.Second),
		StockSegments:         max(s.StockSegments, 1),
		State:                 s.State(now),
		Stock:                 s.Stock,
	}
}
