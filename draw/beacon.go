package draw

import "crypto/sha256"

// BeaconSeed is the seed a draw that waits for a beacon ranks with
// (docs/API.md "A draw nobody can bias"): SHA-256(seed ‖ randomness ‖
// entriesRoot). The operator's secret seed cannot be grinded against the
// entries (it was committed before the lobby opened), the entries cannot
// be chosen against the randomness (their root was committed before the
// round existed), and nobody knows the randomness before the round is
// published.
func BeaconSeed(seed, randomness, entriesRoot []byte) []byte {
	h := sha256.New()
	h.Write(seed)
	h.Write(randomness)
	h.Write(entriesRoot)
	return h.Sum(nil)
}
