package api

import (
	"bufio"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// Event-stream timing. A stream re-reads its order when the worker
// publishes a change (OrderChannel) and, as a safety net for a missed
// message, every streamPoll; it sends a comment every streamHeartbeat so
// proxies keep the connection and a gone client is noticed.
const (
	streamPoll      = 2 * time.Second
	streamHeartbeat = 15 * time.Second
	// streamMaxAge ends a stream that has seen no terminal status (the
	// browser's EventSource, or the shopper page, reconnects).
	streamMaxAge = 30 * time.Minute
)

// orderEvents streams the order (docs/API.md): a `status` event with the order
// at once and at every change, ending after PAID or CLOSED. Who may see it
// is decided once, at the start, exactly as for GET /orders/{id}.
func (s *Server) orderEvents(c *fiber.Ctx) error {
	ctx, cancel := s.reqCtx(c)
	o, err := s.visibleOrder(ctx, c)
	cancel()
	if err != nil {
		return err
	}
	// The fiber.Ctx is recycled once this handler returns, and the stream
	// is written after that: keep only plain values.
	id, p := o.ID, principal(c)
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	wake := s.watchers.add(id)
	s.metrics.streams.Inc()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.metrics.streams.Dec()
		defer s.watchers.remove(id, wake)
		s.streamOrder(w, o, id, p, wake)
	})
	return nil
}

func (s *Server) streamOrder(w *bufio.Writer, o *seckill.Order, id int64, p auth.Principal, wake <-chan struct{}) {
	heartbeat := time.NewTicker(streamHeartbeat)
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	end := time.After(streamMaxAge)
	var last []byte
	for {
		if o != nil {
			body, err := json.Marshal(view(o, p))
			if err != nil {
				return
			}
			if string(body) != string(last) {
				if writeEvent(w, "status", body) != nil {
					return
				}
				last = body
			}
			// A refund may still follow a CLOSED order, but docs/API.md ends the
			// stream at the terminal status; GET /orders/{id} shows it.
			if o.Status.Terminal() {
				return
			}
		}
		select {
		case <-s.closing:
			// This server is stopping: the browser reconnects (to one that
			// stays) within a second, rather than its default few.
			_, _ = w.WriteString(": server shutting down\nretry: 1000\n\n")
			_ = w.Flush()
			return
		case <-end:
			return
		case <-heartbeat.C:
			if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
				return
			}
			continue
		case <-wake:
		case <-poll.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
		next, err := s.findOrder(ctx, id, p)
		cancel()
		if err != nil {
			// Unreachable store: keep the stream, try again at the next poll.
			s.cfg.Log.Debug("order stream read", "orderID", id, "error", err)
			continue
		}
		o = next
	}
}

func writeEvent(w *bufio.Writer, event string, data []byte) error {
	if _, err := w.WriteString("event: " + event + "\ndata: "); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if _, err := w.WriteString("\n\n"); err != nil {
		return err
	}
	return w.Flush()
}

// orderWatchers wakes the event streams of an order when it changes.
type orderWatchers struct {
	mu   sync.Mutex
	subs map[int64]map[chan struct{}]struct{}
}

func newOrderWatchers() *orderWatchers {
	return &orderWatchers{subs: map[int64]map[chan struct{}]struct{}{}}
}

func (w *orderWatchers) add(id int64) chan struct{} {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs[id] == nil {
		w.subs[id] = map[chan struct{}]struct{}{}
	}
	w.subs[id][ch] = struct{}{}
	w.mu.Unlock()
	return ch
}

func (w *orderWatchers) remove(id int64, ch chan struct{}) {
	w.mu.Lock()
	delete(w.subs[id], ch)
	if len(w.subs[id]) == 0 {
		delete(w.subs, id)
	}
	w.mu.Unlock()
}

func (w *orderWatchers) wake(id int64) {
	w.mu.Lock()
	for ch := range w.subs[id] {
		notify(ch)
	}
	w.mu.Unlock()
}

func (w *orderWatchers) wakeAll() {
	w.mu.Lock()
	for _, chs := range w.subs {
		for ch := range chs {
			notify(ch)
		}
	}
	w.mu.Unlock()
}

// notify wakes ch without blocking: one pending wake-up is enough.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
