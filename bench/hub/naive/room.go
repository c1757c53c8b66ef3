// One screening in memory: its line, its admitted, its seats, behind one mutex; its admission loop (ticks
// at the interval, refills of freed slots, paced rank pushes); a socket's join, leave and close.

package main

import (
	"context"
	"encoding/json"
	mathrand "math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/booking"
)

// admission is a screening's admission settings.
type admission struct {
	interval         time.Duration
	batch, maxActive int
	activeTTL        time.Duration
}

// state is where a token stands.
type state int

const (
	waiting  state = iota // in the line (or the pre-queue)
	admitted              // holds a slot until expiresAt
	gone                  // reserved, left, lapsed, disconnected while waiting, or the sale sold out
)

// member is one token's place.
type member struct {
	token     string
	state     state
	c         *client // its newest socket; nil once that closed
	pass      string
	expiresAt time.Time
	// The reservation the pass made (reserved): its Idempotency-Key, what it asked for and its 201.
	reserved bool
	key      string
	request  string
	answer   []byte
}

// room is one screening.
type room struct {
	id, name          string
	startsAt, opensAt time.Time
	adm               admission
	seats             []booking.Seat
	index             map[string]int // seat id → its place in seats
	// moved asks the loop to push ranks: a refill changed the line.
	moved chan struct{}

	mu         sync.Mutex
	opened     bool
	line       []*member // in order: index i has rank i+1
	members    map[string]*member
	passes     map[string]*member
	active     map[*member]bool
	clients    map[*client]*member
	freed      int  // slots freed by reservations and leaves since the last admission
	changed    bool // someone joined or left the line since the last admission
	eventAt    time.Time
	sold       []bool
	soldN      int
	soldOut    bool
	lastSaleAt time.Time
	orders     int64
	seatJSON   []byte // the seat map, encoded; nil after a sale
}

func newRoom(id, name string, startsAt, opensAt time.Time, seats []booking.Seat, adm admission) *room {
	index := make(map[string]int, len(seats))
	for i, s := range seats {
		index[s.ID] = i
	}
	return &room{
		id: id, name: name, startsAt: startsAt, opensAt: opensAt, adm: adm, seats: seats, index: index,
		moved:   make(chan struct{}, 1),
		members: map[string]*member{}, passes: map[string]*member{}, active: map[*member]bool{},
		clients: map[*client]*member{}, sold: make([]bool, len(seats)),
		opened: !time.Now().Before(opensAt),
	}
}

// run ticks the screening at the sale time, then at every multiple of its interval, and pushes the ranks
// after every admission that moved the line, at most every rankEvery: a push due sooner waits, and then
// sends the line as it is by then.
func (r *room) run(ctx context.Context, rankEvery time.Duration) {
	tick := time.NewTimer(time.Until(r.nextTick(time.Now())))
	defer tick.Stop()
	pace := time.NewTimer(time.Hour)
	pace.Stop()
	defer pace.Stop()
	var lastPush time.Time
	due := false
	push := func() {
		if due {
			return
		}
		now := time.Now()
		if wait := lastPush.Add(rankEvery).Sub(now); wait > 0 {
			due = true
			pace.Reset(wait)
			return
		}
		lastPush = now
		r.pushRanks()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if r.admit(now, false) {
				push()
			}
			tick.Reset(time.Until(r.nextTick(time.Now())))
		case <-r.moved:
			push()
		case <-pace.C:
			due, lastPush = false, time.Now()
			r.pushRanks()
		}
	}
}

// nextTick is the sale time until the line opens (the opening admits at once), then the next multiple of
// the interval.
func (r *room) nextTick(now time.Time) time.Time {
	r.mu.Lock()
	opened := r.opened
	r.mu.Unlock()
	if !opened {
		return r.opensAt
	}
	return now.Truncate(r.adm.interval).Add(r.adm.interval)
}

// admit runs one admission at now, as queue/lua/admit.lua does: the lapsed slots are dropped, then a tick
// admits min(batch_size, max_active − active) of the earliest waiting, a refill only as many as were freed
// since the last admission. The first tick at or after the sale time opens the line, shuffling the
// pre-queue. The admitted are sent their pass at once; moved says the waiting are due their ranks.
func (r *room) admit(now time.Time, refill bool) (moved bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.opened {
		if refill || now.Before(r.opensAt) {
			return false
		}
		r.opened, r.changed = true, true
		mathrand.Shuffle(len(r.line), func(i, j int) { r.line[i], r.line[j] = r.line[j], r.line[i] })
	}
	for m := range r.active {
		if !now.Before(m.expiresAt) {
			delete(r.active, m)
			delete(r.passes, m.pass)
			m.state = gone
		}
	}
	if r.soldOut {
		return false
	}
	n := max(min(r.adm.batch, r.adm.maxActive-len(r.active), len(r.line)), 0)
	if refill {
		if n = min(n, r.freed); n == 0 {
			return false
		}
		r.freed -= n
	} else {
		r.freed = 0
	}
	expires := now.Add(r.adm.activeTTL).Truncate(time.Millisecond)
	for _, m := range r.line[:n] {
		m.state, m.pass, m.expiresAt = admitted, newPass(), expires
		r.passes[m.pass] = m
		r.active[m] = true
		if m.c != nil {
			m.c.push(m.admittedMessage())
		}
	}
	r.line = slices.Delete(r.line, 0, n)
	moved = n > 0 || r.changed
	r.changed = false
	if moved {
		r.eventAt = now
	}
	return moved
}

// pushRanks sends every waiting socket its rank in the line as it is now.
func (r *room) pushRanks() {
	r.mu.Lock()
	line := make([]*client, len(r.line))
	for i, m := range r.line {
		line[i] = m.c
	}
	at := r.eventAt.UnixMilli()
	r.mu.Unlock()
	for i, c := range line {
		if c == nil {
			continue
		}
		msg, _ := json.Marshal(position{Type: "position", Rank: i + 1, Total: len(line), TickAt: at})
		c.push(frame{data: msg})
	}
}

// refilled admits into a freed slot at once, and has the loop push the ranks.
func (r *room) refilled() {
	if r.admit(time.Now(), true) {
		select {
		case r.moved <- struct{}{}:
		default:
		}
	}
}

// join registers the socket c for token ("" or unknown: a new place at the end) and sends its first
// message, under the lock so that no admission or rank overtakes it; soldOut says the sale is over, and
// nothing was sent.
func (r *room) join(c *client, token string) (soldOut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.soldOut {
		return true
	}
	now := time.Now()
	m := r.members[token]
	inserted := false
	switch {
	case m != nil && m.state == admitted && now.Before(m.expiresAt):
		m.c = c
		r.clients[c] = m
		c.push(m.admittedMessage())
		return false
	case m != nil && m.state == waiting:
		m.c = c
	default:
		if token == "" {
			token = newToken()
		}
		m = &member{token: token, state: waiting, c: c}
		r.members[token] = m
		r.line = append(r.line, m)
		r.changed, inserted = true, true
	}
	r.clients[c] = m
	var msg []byte
	if !r.opened {
		msg, _ = json.Marshal(prequeued{Type: "prequeue", Token: m.token, OpensAt: wireTime(r.opensAt), Total: len(r.line), Inserted: inserted})
	} else {
		rank := slices.Index(r.line, m) + 1
		msg, _ = json.Marshal(queued{Type: "queued", Token: m.token, Rank: rank, Total: len(r.line), Inserted: inserted})
	}
	c.push(frame{data: msg})
	return false
}

// leave takes c's token out of the line, or frees its slot (refilled at once).
func (r *room) leave(c *client) {
	r.mu.Lock()
	m := r.clients[c]
	freed := false
	switch {
	case m == nil:
	case m.state == waiting:
		r.drop(m)
	case m.state == admitted:
		delete(r.active, m)
		delete(r.passes, m.pass)
		m.state, freed = gone, true
		r.freed++
	}
	r.mu.Unlock()
	if freed {
		r.refilled()
	}
}

// disconnect forgets the closed socket c; a waiting token loses its place with it (there is no grace).
func (r *room) disconnect(c *client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.clients[c]
	delete(r.clients, c)
	if m == nil || m.c != c {
		return
	}
	m.c = nil
	if m.state == waiting {
		r.drop(m)
	}
}

// drop takes the waiting m out of the line. The caller holds r.mu.
func (r *room) drop(m *member) {
	if i := slices.Index(r.line, m); i >= 0 {
		r.line = slices.Delete(r.line, i, i+1)
	}
	m.state = gone
	r.changed = true
}
