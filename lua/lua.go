// Package lua holds seckill's Redis scripts, one file per operation, each
// with a header giving KEYS, ARGV and return codes. The redisstore package
// runs them (by EVALSHA) and is the only code that talks to Redis.
//
// admit.lua is not a script of its own: it holds the functions that write
// an admission and hand a unit to the waitlist, and is put in front of
// every script that gives a buyer a unit, so there is one copy of each.
// take.lua and give.lua move units between the parts of a sale whose
// stock is split (stock_segments).
package lua

import _ "embed"

//go:embed admit.lua
var admit string

// The scripts' sources.
var (
	//go:embed claim.lua
	claim string
	//go:embed release.lua
	release string
	//go:embed join.lua
	join string
	//go:embed handover.lua
	handover string
	//go:embed give.lua
	give string
	//go:embed take.lua
	Take string
	//go:embed settle.lua
	Settle string
	//go:embed aim.lua
	Aim string
	//go:embed unlock.lua
	Unlock string
	//go:embed sequence.lua
	Sequence string
	//go:embed warm.lua
	Warm string
	//go:embed rewarm.lua
	Rewarm string

	// Claim admits or refuses one claim.
	Claim = admit + claim
	// Release forgets an order's claim and gives its unit back: to the
	// first waiting buyer, or to the stock.
	Release = admit + release
	// Join puts a buyer on a sale's waitlist (or admits them, when a unit
	// is in stock).
	Join = admit + join
	// HandOver gives units left in stock to waiting buyers.
	HandOver = admit + handover
	// Give lands units moved from another part of a sale.
	Give = admit + give
)
