-- +goose Up
-- Who this installation is: one row, made once. Its id names the
-- installation in Redis (the owner of its key prefix, and the default
-- prefix itself), so two installations never share Redis keys by accident.
CREATE TABLE installation (
    id         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    one        BOOLEAN NOT NULL DEFAULT TRUE UNIQUE CHECK (one),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO installation DEFAULT VALUES;

-- +goose Down
DROP TABLE installation;
