-- +goose Up
-- Claim outcomes are counted under the API's own words (SOLD_OUT, not
-- sold_out), as the metrics and the problem codes name them. not_warmed
-- and unavailable were both answered 503 UNAVAILABLE: they merge.
INSERT INTO sale_claims (sale_id, outcome, count)
SELECT sale_id,
       CASE outcome
           WHEN 'admitted' THEN 'ADMITTED'
           WHEN 'replayed' THEN 'REPLAYED'
           WHEN 'sold_out' THEN 'SOLD_OUT'
           WHEN 'already_claimed' THEN 'ALREADY_CLAIMED'
           WHEN 'not_started' THEN 'SALE_NOT_STARTED'
           WHEN 'ended' THEN 'SALE_ENDED'
           WHEN 'rate_limited' THEN 'RATE_LIMITED'
           WHEN 'not_warmed' THEN 'UNAVAILABLE'
           WHEN 'unavailable' THEN 'UNAVAILABLE'
           WHEN 'invalid' THEN 'INVALID_REQUEST'
           WHEN 'sale_not_found' THEN 'SALE_NOT_FOUND'
           ELSE 'INTERNAL'
       END,
       sum(count)
FROM sale_claims
WHERE outcome <> upper(outcome)
GROUP BY 1, 2
ON CONFLICT (sale_id, outcome) DO UPDATE SET count = sale_claims.count + EXCLUDED.count;
DELETE FROM sale_claims WHERE outcome <> upper(outcome);

-- +goose Down
INSERT INTO sale_claims (sale_id, outcome, count)
SELECT sale_id,
       CASE outcome
           WHEN 'SALE_NOT_STARTED' THEN 'not_started'
           WHEN 'SALE_ENDED' THEN 'ended'
           WHEN 'INVALID_REQUEST' THEN 'invalid'
           WHEN 'INTERNAL' THEN 'error'
           ELSE lower(outcome)
       END,
       count
FROM sale_claims
WHERE outcome = upper(outcome)
ON CONFLICT (sale_id, outcome) DO UPDATE SET count = sale_claims.count + EXCLUDED.count;
DELETE FROM sale_claims WHERE outcome = upper(outcome);
