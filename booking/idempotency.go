// Idempotency-Key: telling a retry of a request that reserved from another request, and answering it with
// the reservation it made.

package booking

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/waitroom/waitroom/pass"
	"github.com/waitroom/waitroom/queue"
)

// mayBeRetry tells the errors a retry of a request that already reserved runs into: its pass is spent, its
// seats are sold (or held by the first attempt still finishing), or the screening sold out.
func mayBeRetry(err error) bool {
	return errors.Is(err, queue.ErrPassSpent) || errors.Is(err, queue.ErrNotActive) ||
		errors.Is(err, ErrSeatTaken) || errors.Is(err, ErrSeatLocked) || errors.Is(err, ErrSoldOut)
}

// replay answers a retry: the reservation this pass made under key, or the original error if there is none.
func (b *Booking) replay(ctx context.Context, claims pass.Claims, key, hash string, original error) (Reservation, error) {
	prev, prevKey, prevHash, err := b.store.byPass(ctx, claims.ID)
	switch {
	case errors.Is(err, sql.ErrNoRows) || (err == nil && prevKey != key):
		return Reservation{}, original
	case err != nil:
		return Reservation{}, errors.Join(original, fmt.Errorf("booking: idempotency lookup: %w", err))
	case prevHash != hash:
		return Reservation{}, fmt.Errorf("booking: key %q was used for other seats: %w", truncate(key, 32), ErrIdempotencyMismatch)
	}
	return prev, nil
}

// requestHash names what a request asked for, to tell a retry from another request under the same key.
func requestHash(screening string, sortedSeats []string) string {
	sum := sha256.Sum256([]byte(screening + "\x00" + strings.Join(sortedSeats, ",")))
	return hex.EncodeToString(sum[:])
}
