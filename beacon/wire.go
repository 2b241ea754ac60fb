package beacon

// roundJSON is a round as drand's HTTP API v1 serves it
// (GET /{chain_hash}/public/{round}), hex-encoded; the Server writes it and
// the Client reads it. Chained schemes add previous_signature, which an
// unchained chain has not.
type roundJSON struct {
	Round      uint64 `json:"round"`
	Randomness string `json:"randomness"`
	Signature  string `json:"signature"`
}

// infoJSON is a chain's info as drand's HTTP API v1 serves it
// (GET /{chain_hash}/info): period in seconds, genesis_time in Unix seconds.
type infoJSON struct {
	PublicKey   string       `json:"public_key"`
	Period      int64        `json:"period"`
	GenesisTime int64        `json:"genesis_time"`
	Hash        string       `json:"hash"`
	GroupHash   string       `json:"groupHash"`
	SchemeID    string       `json:"schemeID"`
	Metadata    infoMetadata `json:"metadata"`
}

type infoMetadata struct {
	BeaconID string `json:"beaconID"`
}
