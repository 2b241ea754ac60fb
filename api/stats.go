package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// saleStats answers a sale's funnel (admin).
func (s *Server) saleStats(c *fiber.Ctx) error {
	id, ok := parseID(c.Params("id"))
	if !ok {
		return errNoSale
	}
	ctx, cancel := s.reqCtx(c)
	defer cancel()
	st, err := s.cfg.Store.SaleStats(ctx, id)
	if isNotFound(err) {
		return errNoSale
	}
	if err != nil {
		return err
	}
	s.fillRemaining(ctx, []*seckill.Sale{st.Sale})
	return c.JSON(statsJSON(st, time.Now()))
}

func statsJSON(st *seckill.SaleStats, now time.Time) seckill.SaleStatsJSON {
	sale := st.Sale
	out := seckill.SaleStatsJSON{
		SaleID: strconv.FormatInt(sale.ID, 10), Name: sale.Name, State: sale.State(now), Stock: sale.Stock,
		Claims: seckill.ClaimStats{Rejected: map[seckill.Code]int64{}},
		Orders: seckill.OrderStats{
			Queued:          st.Orders[seckill.StatusQueued],
			AwaitingPayment: st.Orders[seckill.StatusAwaitingPayment],
			Paid:            st.Orders[seckill.StatusPaid],
			Closed:          st.Orders[seckill.StatusClosed],
			ClosedByReason:  st.Closed,
		},
		Refunds: seckill.RefundStats{
			Pending: st.Refunds[seckill.RefundPending], Succeeded: st.Refunds[seckill.RefundSucceeded], AmountCents: st.RefundsCents,
		},
		RevenueCents: st.PaidCents, Currency: sale.Currency, SoldOutAt: st.SoldOutAt,
	}
	for outcome, n := range st.Claims {
		out.Claims.Total += n
		switch outcome {
		case seckill.Admitted:
			out.Claims.Admitted += n
		case seckill.Replayed:
			out.Claims.Replayed += n
		default:
			out.Claims.Rejected[seckill.Code(outcome)] += n
		}
	}
	for _, n := range st.Orders {
		out.Orders.Total += n
	}
	if st.SoldOutAt != nil {
		secs := max(0, st.SoldOutAt.Sub(sale.StartsAt).Seconds())
		out.TimeToSellOutSeconds = &secs
	}
	return out
}
