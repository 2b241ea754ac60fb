// Package lua holds seckill's Redis scripts, one file per operation, each
// with a header giving KEYS, ARGV and return codes. The redisstore package
// runs them (by EVALSHA) and is the only code that talks to Redis.
package lua

import _ "embed"

// The scripts' sources.
var (
	//go:embed claim.lua
	Claim string
	//go:embed release.lua
	Release string
	//go:embed warm.lua
	Warm string
	//go:embed rewarm.lua
	Rewarm string
)
