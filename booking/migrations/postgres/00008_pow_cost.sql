-- +goose Up
-- The screening's own proof-of-work cost: the mean number of key derivations a socket tries before it gets
-- a place (0: none); NULL takes the server's pow.cost.
ALTER TABLE screenings ADD COLUMN pow_cost INTEGER CHECK (pow_cost >= 0);

-- +goose Down
ALTER TABLE screenings DROP COLUMN pow_cost;
