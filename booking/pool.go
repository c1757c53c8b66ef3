// The store's way to the database: every statement and transaction first takes a slot of the classes' gate
// (package overload), so that when the pool is saturated the payment backend's confirm is served before the
// reservations, and those before the arrivals' reads, instead of in database/sql's random order of waiters.

package booking

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"

	"github.com/waitroom/waitroom/overload"
)

// pool is the database behind the gate. It offers only the calls the store makes, each of which takes a slot
// for as long as it holds a connection: a statement until it returns, a transaction until it commits or
// rolls back. A call the gate refuses (its class waited as long as it may) fails with overload.ErrBusy,
// having sent nothing.
type pool struct {
	db   *sqlx.DB
	gate *overload.Gate // nil: no gate (a store nobody configured)
}

// take waits for a slot for ctx's class; within a session (below) the session's slot serves.
func (p *pool) take(ctx context.Context) (func(), error) {
	if inSession(ctx) {
		return func() {}, nil
	}
	done, err := p.gate.Take(ctx)
	if err != nil {
		return nil, fmt.Errorf("booking: database: %w", err)
	}
	return done, nil
}

func (p *pool) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	done, err := p.take(ctx)
	if err != nil {
		return err
	}
	defer done()
	return p.db.GetContext(ctx, dest, query, args...)
}

func (p *pool) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	done, err := p.take(ctx)
	if err != nil {
		return err
	}
	defer done()
	return p.db.SelectContext(ctx, dest, query, args...)
}

func (p *pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	done, err := p.take(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return p.db.ExecContext(ctx, query, args...)
}

// PingContext asks the database whether it answers, outside the gate: /readyz says whether the database
// is up, not whether the store's requests are queueing for it, and an instance saturated by a sale must not
// be taken out of its load balancer for that. It uses one of the connections outside the gate (db.go).
func (p *pool) PingContext(ctx context.Context) error { return p.db.PingContext(ctx) }

// BeginTxx begins a transaction that holds its slot until it commits or rolls back.
func (p *pool) BeginTxx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	done, err := p.take(ctx)
	if err != nil {
		return nil, err
	}
	t, err := p.db.BeginTxx(ctx, opts)
	if err != nil {
		done()
		return nil, err
	}
	return &tx{Tx: t, done: done}, nil
}

func (p *pool) Rebind(query string) string { return p.db.Rebind(query) }

// Stats and Conn are the warmer's (warm.go), outside the gate: it opens connections only while the pool has
// fewer than it keeps warm, so it never holds one a gated request was promised.
func (p *pool) Stats() sql.DBStats                          { return p.db.Stats() }
func (p *pool) Conn(ctx context.Context) (*sql.Conn, error) { return p.db.Conn(ctx) }
func (p *pool) DriverName() string                          { return p.db.DriverName() }

// tx is a transaction that gives its slot back when it ends. Every transaction of the store ends in Commit
// or Rollback (a deferred Rollback after a Commit gives nothing back twice).
type tx struct {
	*sqlx.Tx
	done func()
}

func (t *tx) Commit() error {
	defer t.done()
	return t.Tx.Commit()
}

func (t *tx) Rollback() error {
	defer t.done()
	return t.Tx.Rollback()
}

type sessionKey struct{}

// slotSession is a session's slot; ended once it was given back, when the context that carries it takes
// slots of its own again.
type slotSession struct{ ended atomic.Bool }

// inSession says whether ctx carries a session whose slot is still held.
func inSession(ctx context.Context) bool {
	s, ok := ctx.Value(sessionKey{}).(*slotSession)
	return ok && !s.ended.Load()
}

// session takes one slot for a request's statements and transactions made one after another with the
// returned context (never two at once: the slot stands for one connection), so that a request that has
// begun does not queue at the gate again for its next statement: a reservation's count after its commit,
// while its seat locks and its hold's clock run; a transition's read, write and count. done gives the slot
// back (once); after it, the context's statements take slots of their own again. Within a session
// already, it returns ctx and holds nothing more.
func (s *Store) session(ctx context.Context) (context.Context, func(), error) {
	if inSession(ctx) {
		return ctx, func() {}, nil
	}
	done, err := s.db.take(ctx)
	if err != nil {
		return ctx, nil, err
	}
	ss := &slotSession{}
	end := sync.OnceFunc(func() {
		ss.ended.Store(true)
		done()
	})
	return context.WithValue(ctx, sessionKey{}, ss), end, nil
}

// querier is what a read inside a transaction or outside one calls: the pool or a tx.
type querier interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	SelectContext(ctx context.Context, dest any, query string, args ...any) error
	Rebind(query string) string
}

var (
	_ querier = (*pool)(nil)
	_ querier = (*tx)(nil)
)
