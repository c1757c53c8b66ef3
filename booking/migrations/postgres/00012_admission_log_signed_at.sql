-- +goose Up
-- When the head's checkpoint was signed (Unix milliseconds; 0: signed before this column, not known), so
-- the control room can say how old the latest checkpoint is.
ALTER TABLE admission_log_heads ADD COLUMN checkpoint_at BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE admission_log_heads DROP COLUMN checkpoint_at;
