package api

import (
	"context"
	"time"

	"github.com/seckill/seckill"
)

// What the API asks of the database, Redis, Temporal and payment delivery,
// each as small as the handlers need. app passes the real adapters
// (store.Store, redisstore.Store, saga.Client, delivery.Deliverer); the
// handler tests pass the real database and Redis and a fake Temporal.

// Store is the API's view of the database (store.Store). Rows that do not
// exist are seckill.ErrNotFound; a database that cannot be used now
// (refused or dropped connections, no free connection before the
// request's deadline) is seckill.ErrUnavailable.
type Store interface {
	Ping(ctx context.Context) error
	CreateSale(ctx context.Context, n seckill.NewSale, within func(*seckill.Sale) error) (*seckill.Sale, error)
	Sale(ctx context.Context, id int64) (*seckill.Sale, error)
	Sales(ctx context.Context, limit int, before int64) ([]*seckill.Sale, error)
	SaleStats(ctx context.Context, id int64) (*seckill.SaleStats, error)
	// AddClaimCounts and MarkSoldOut keep the funnel of GET .../stats.
	AddClaimCounts(ctx context.Context, counts map[int64]map[seckill.Outcome]int64) error
	MarkSoldOut(ctx context.Context, saleID int64, at time.Time) error
	Order(ctx context.Context, id int64) (*seckill.Order, error)
	OrdersOf(ctx context.Context, saleID int64, userID string) ([]*seckill.Order, error)
	OrderCounts(ctx context.Context, saleIDs []int64) (map[int64]map[seckill.OrderStatus]int64, error)
	PaymentIntentOf(ctx context.Context, orderID int64) (*seckill.Intent, error)
	SavePaymentIntent(ctx context.Context, orderID int64, in seckill.Intent) (seckill.Intent, error)
	RecordPaymentEvent(ctx context.Context, e seckill.PaymentRecord) (*seckill.PaymentRecord, bool, error)
	// The lobby and the draw (docs/API.md "Fair start").
	Enter(ctx context.Context, saleID int64, userID string, item seckill.Item) (entry *seckill.LobbyEntry, created bool, err error)
	LobbyEntryOf(ctx context.Context, saleID int64, userID string) (*seckill.LobbyEntry, error)
	DrawOf(ctx context.Context, saleID int64) (*seckill.Draw, error)
	LobbyEntries(ctx context.Context, saleID int64, after []byte, limit int) ([]seckill.EntryLine, error)
	LobbyEntriesFrom(ctx context.Context, saleID int64, first []byte, limit int) ([]seckill.EntryLine, error)
	DrawOrders(ctx context.Context, saleID int64) ([]seckill.DrawOrder, error)
	DrawVariants(ctx context.Context, saleID int64) ([]seckill.DrawVariant, error)
	// Restock is the database half of a restock (docs/API.md
	// "Restocking"): add units of the sale's variant sku, recorded under
	// key, or, when key has a record already, that record (first false).
	// seckill.ErrNotFound: no such sale; a *seckill.Error
	// VARIANT_NOT_FOUND (no such variant) or SALE_ENDED (a new key at or
	// after ends_at, by now).
	Restock(ctx context.Context, saleID int64, sku string, add int64, key string, now time.Time) (seckill.Restock, bool, error)
	// MarkRestockApplied records that the Redis half of restock id is
	// done; seckill.ErrNotFound for a restock that does not exist.
	MarkRestockApplied(ctx context.Context, saleID, id int64) error
	// The durable waitlist (docs/DESIGN.md invariant 10): a join writes
	// the buyer's pending row before it asks Redis (a row already there
	// stays), fills it with the place Redis gave before the buyer is told
	// (a retry of the same place keeps the first row; false when the row
	// is gone, a leave or the buyer's order deleted it), drops it when
	// Redis gave no place (only a pending row); a leave takes the place back
	// (the row pending) before it asks Redis, and deletes the row after.
	PendWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) error
	FillWaitlistEntry(ctx context.Context, e seckill.WaitlistEntry) (bool, error)
	DropPendingWaitlistEntry(ctx context.Context, saleID int64, userID string) error
	WithdrawWaitlistEntry(ctx context.Context, saleID int64, userID string) error
	DeleteLeftWaitlistEntry(ctx context.Context, saleID int64, userID string, place int64) error
}

// Redis is the API's view of the Redis hot path (redisstore.Store): the
// claim and waitlist scripts, the admission records, and the counters.
type Redis interface {
	Ping(ctx context.Context) error
	Warm(ctx context.Context, spec seckill.WarmSpec) (bool, error)
	// KnowSegments tells Redis how many stock segments a sale has, as the
	// database says.
	KnowSegments(saleID int64, n int)
	Claim(ctx context.Context, saleID int64, userID string, orderID int64, idempotencyKey string, terms seckill.Terms, item seckill.Item) (seckill.ClaimResult, error)
	ClaimOf(ctx context.Context, saleID int64, userID string) (int64, error)
	Admission(ctx context.Context, orderID int64, saleIDs []int64) (a seckill.Admission, ok bool, err error)
	Join(ctx context.Context, saleID int64, userID string, item seckill.Item, maxEntries int, orderID int64, terms seckill.Terms) (seckill.JoinResult, error)
	WaitStateOf(ctx context.Context, saleID int64, userID string) (seckill.WaitState, error)
	Leave(ctx context.Context, saleID int64, userID string) (bool, error)
	// PlaceOf is where the buyer waits (variant, units, join sequence), as
	// the database keeps it; ok false when they wait nowhere.
	PlaceOf(ctx context.Context, saleID int64, userID string) (e seckill.WaitlistEntry, ok bool, err error)
	Waiting(ctx context.Context, saleID int64) (int64, error)
	ActiveSales(ctx context.Context) ([]int64, error)
	RemainingByVariant(ctx context.Context, saleIDs []int64) (map[int64]map[string]int64, error)
	Counts(ctx context.Context, saleIDs []int64) (map[int64]seckill.SaleCounts, error)
	FollowChanges(ctx context.Context, h seckill.Changes)
	// Restock is the Redis half of a restock, once per restock however
	// often it runs: the variant's waiting buyers first (each a new order
	// numbered by nextID, on terms), then the stock. An error leaves the
	// outcome unknown (run it again); Restocked.Applied says whether
	// Redis holds every unit.
	Restock(ctx context.Context, r seckill.Restock, terms seckill.Terms, nextID func() (int64, error)) (seckill.Restocked, error)
}

// Sagas is the API's view of Temporal (saga.Client).
type Sagas interface {
	// Cancel asks the order's saga to close its unpaid order;
	// seckill.ErrOrderDecided once it has finished.
	Cancel(ctx context.Context, in seckill.SagaInput) error
	CheckHealth(ctx context.Context) error
	// StartDraw starts a sale's draw (idempotent).
	StartDraw(ctx context.Context, in seckill.DrawInput) error
}

// Deliverer hands a recorded payment event to its order's saga
// (delivery.Deliverer) and says what became of it; seckill.ErrPaymentNotYet
// when the saga cannot take it yet.
type Deliverer interface {
	Deliver(ctx context.Context, ev seckill.PaymentEvent, orderID int64) (seckill.PaymentOutcome, error)
}
