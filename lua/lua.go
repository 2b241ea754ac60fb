// Package lua holds seckill's Redis scripts, one file per operation, each
// with a header giving KEYS, ARGV and return codes. The redisstore package
// runs them (by EVALSHA) and is the only code that talks to Redis.
//
// Three files are not scripts of their own but shared functions, put in
// front of the scripts that use them so there is one copy of each:
// clock.lua (Redis' clock), admit.lua (write an admission, hand a unit
// to the waitlist) and move.lua (the record of units in flight between
// the parts of a sale whose stock is split, stock_segments). take.lua,
// give.lua, aim.lua and forget.lua are the steps of such a move.
package lua

import _ "embed"

// The shared functions.
var (
	//go:embed clock.lua
	clock string
	//go:embed admit.lua
	admit string
	//go:embed move.lua
	move string
)

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
	take string
	//go:embed aim.lua
	aim string
	//go:embed restore.lua
	Restore string
	//go:embed forget.lua
	Forget string
	//go:embed unlock.lua
	Unlock string
	//go:embed useproof.lua
	UseProof string
	//go:embed sequence.lua
	Sequence string
	//go:embed warm.lua
	Warm string
	//go:embed rewarm.lua
	rewarm string
	//go:embed open.lua
	Open string
	//go:embed adopt.lua
	Adopt string
	//go:embed leave.lua
	Leave string
	//go:embed now.lua
	now string
	//go:embed restock.lua
	restock string

	// Claim admits or refuses one claim.
	Claim = clock + admit + claim
	// Release forgets an order's claim and gives its unit back: to the
	// first waiting buyer, or to the stock (or parks it as a move, on a
	// sale of several parts).
	Release = clock + admit + move + release
	// Join puts a buyer on a sale's waitlist (or admits them, when a unit
	// is in stock).
	Join = clock + admit + join
	// HandOver gives units left in stock to waiting buyers.
	HandOver = clock + admit + handover
	// Take records units leaving a part as a move.
	Take = clock + move + take
	// Give lands a move's units in a part.
	Give = clock + admit + move + give
	// Rewarm loads a segment Redis lost from the database's snapshot, and
	// admits again the admissions it lost before their orders were
	// written.
	Rewarm = clock + admit + rewarm
	// Aim fixes a parked move's destination, once.
	Aim = clock + move + aim
	// Now reads Redis' clock on the sale's server.
	Now = clock + now
	// Restock places a restock's units, once: to the waiting buyers
	// first, then the stock (or parks those owed to other segments as
	// moves).
	Restock = clock + admit + move + restock
)
