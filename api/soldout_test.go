package api_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
)

// serve runs r's server on a loopback listener until the test ends, so the
// restock watcher runs, and waits until it has subscribed.
func (r *claimRig) serve(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	channel := r.rstore.RestockChannel()
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := r.rdb.PubSubNumSub(context.Background(), channel).Result()
		if err == nil && n[channel] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody subscribed to %s", channel)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *claimRig) claimAs(t *testing.T, user string, sale int64) claimAnswer {
	t.Helper()
	tok, err := auth.SignToken(r.secret, user, false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return r.send(t, "/api/v1/sales/"+strconv.FormatInt(sale, 10)+"/claims", "Bearer "+tok, "", nil)
}

// sneakUnit puts a unit back into a sale's Redis counter without telling
// anyone, so only a Redis call could see it.
func (r *claimRig) sneakUnit(t *testing.T, sale int64) {
	t.Helper()
	if err := r.rdb.Incr(context.Background(), r.rstore.SaleKeys(sale).Stock).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestSoldOutFlag_AnswersWithoutRedisUntilARestock(t *testing.T) {
	r := newClaimRigWith(t, api.Config{SoldOutTTL: time.Hour}) // only pub/sub clears it
	r.serve(t)
	if a := r.claimAs(t, "alice", r.tiny); a.status != http.StatusAccepted {
		t.Fatalf("alice: %d %s", a.status, a.body)
	}
	if a := r.claimAs(t, "bob", r.tiny); a.decoded.Code != seckill.CodeSoldOut {
		t.Fatalf("bob: %d %s, want SOLD_OUT from the script", a.status, a.body)
	}

	r.sneakUnit(t, r.tiny)
	if a := r.claimAs(t, "carol", r.tiny); a.decoded.Code != seckill.CodeSoldOut {
		t.Fatalf("carol: %d %s, want SOLD_OUT from the flag", a.status, a.body)
	}
	if n, _, _ := r.rstore.Remaining(context.Background(), r.tiny); n != 1 {
		t.Fatalf("the flagged claim reached Redis: remaining %d, want 1", n)
	}
	// Other sales are not flagged.
	if a := r.claimAs(t, "carol", r.big); a.status != http.StatusAccepted {
		t.Fatalf("carol on the big sale: %d %s", a.status, a.body)
	}

	// A returned unit is announced: the flag clears at once.
	if err := r.rdb.Publish(context.Background(), r.rstore.RestockChannel(), strconv.FormatInt(r.tiny, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		a := r.claimAs(t, "dave", r.tiny)
		if a.status == http.StatusAccepted {
			break
		}
		if a.decoded.Code != seckill.CodeSoldOut || time.Now().After(deadline) {
			t.Fatalf("dave after the restock: %d %s", a.status, a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSoldOutFlag_ReleaseClearsIt(t *testing.T) {
	r := newClaimRigWith(t, api.Config{SoldOutTTL: time.Hour})
	r.serve(t)
	a := r.claimAs(t, "alice", r.tiny)
	if a.status != http.StatusAccepted {
		t.Fatalf("alice: %d %s", a.status, a.body)
	}
	if b := r.claimAs(t, "bob", r.tiny); b.decoded.Code != seckill.CodeSoldOut {
		t.Fatalf("bob: %d %s", b.status, b.body)
	}
	// Compensation returns alice's unit with the release script, which
	// announces it.
	order, _ := strconv.ParseInt(a.decoded.OrderID, 10, 64)
	next := &seckill.NextOrder{IDs: []int64{order + 1}, Terms: seckill.Terms{PaymentTimeout: time.Minute, UnitPriceCents: 1, Currency: "usd"}}
	if res, err := r.rstore.Release(context.Background(), r.tiny, "alice", order, seckill.DefaultItem, next); err != nil || !res.Now {
		t.Fatalf("release: %+v %v", res, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b := r.claimAs(t, "bob", r.tiny)
		if b.status == http.StatusAccepted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob after alice's release: %d %s", b.status, b.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSoldOutFlag_Expires(t *testing.T) {
	ttl := 200 * time.Millisecond
	r := newClaimRigWith(t, api.Config{SoldOutTTL: ttl}) // not served: no pub/sub
	r.claimAs(t, "alice", r.tiny)
	if a := r.claimAs(t, "bob", r.tiny); a.decoded.Code != seckill.CodeSoldOut {
		t.Fatalf("bob: %d %s", a.status, a.body)
	}
	r.sneakUnit(t, r.tiny)
	time.Sleep(ttl + 50*time.Millisecond)
	if a := r.claimAs(t, "carol", r.tiny); a.status != http.StatusAccepted {
		t.Fatalf("carol after the flag expired: %d %s", a.status, a.body)
	}
}

func TestSoldOutFlag_IdempotencyKeyAlwaysAsksTheScript(t *testing.T) {
	r := newClaimRigWith(t, api.Config{SoldOutTTL: time.Hour})
	r.claimAs(t, "alice", r.tiny)
	r.claimAs(t, "bob", r.tiny) // sets the flag
	r.sneakUnit(t, r.tiny)
	tok, _ := auth.SignToken(r.secret, "carol", false, time.Hour)
	a := r.send(t, "/api/v1/sales/"+strconv.FormatInt(r.tiny, 10)+"/claims", "Bearer "+tok, "carol-1", nil)
	if a.status != http.StatusAccepted {
		t.Fatalf("carol with a key: %d %s; a keyed answer is recorded, so it must come from the script", a.status, a.body)
	}
}
