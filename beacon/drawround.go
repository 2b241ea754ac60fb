package beacon

import "time"

// DrawDelay is how long after a sale's starts_at (when its lobby closes
// and its entries are committed) the beacon round its draw uses may be
// published at the earliest (docs/API.md "A draw nobody can bias"): long
// enough that the entries' root is published before anyone can know the
// round's randomness, even with the operator's and the beacon's clocks a
// few seconds apart.
const DrawDelay = 10 * time.Second

// DrawRound is the round a draw whose lobby closes at startsAt waits
// for: the first whose time is at least DrawDelay after it.
func (c Chain) DrawRound(startsAt time.Time) uint64 {
	return c.FirstRoundAt(startsAt.Add(DrawDelay))
}
