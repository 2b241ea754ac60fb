package redisstore

import "context"

// ClaimsKeyOf is the claims key of the segment userID belongs to on
// saleID (for the proof-of-work record's test).
func (s *Store) ClaimsKeyOf(ctx context.Context, saleID int64, userID string) (string, error) {
	k, _, err := s.userKeys(ctx, saleID, userID)
	return k.Claims, err
}
