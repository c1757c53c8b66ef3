// The REST routes the swarm and the replay script call, in the real server's JSON: a screening, its seat
// map, a reservation, and the admin's create.

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/booking"
)

// screeningInfo is GET /api/screenings/{id} (docs/protocol.md 7.3).
type screeningInfo struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	StartsAt       time.Time `json:"starts_at"`
	SaleOpensAt    time.Time `json:"sale_opens_at"`
	SeatsTotal     int       `json:"seats_total"`
	SeatsAvailable int       `json:"seats_available"`
	CodeRequired   bool      `json:"code_required"`
	State          string    `json:"state"`
	SiteWide       bool      `json:"site_wide"`
	MaxSeats       int       `json:"max_seats"`
	Waiting        int       `json:"waiting"`
	Active         int       `json:"active"`
	PowCost        int       `json:"pow_cost"`
}

func (r *room) info(now time.Time) screeningInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := "on_sale"
	switch {
	case r.soldOut:
		state = "sold_out"
	case now.Before(r.opensAt):
		state = "upcoming"
	}
	return screeningInfo{
		ID: r.id, Name: r.name, StartsAt: r.startsAt, SaleOpensAt: r.opensAt,
		SeatsTotal: len(r.seats), SeatsAvailable: len(r.seats) - r.soldN, State: state, SiteWide: len(r.seats) == 0,
		MaxSeats: maxSeats, Waiting: len(r.line), Active: len(r.active),
	}
}

// seatMap is GET /api/screenings/{id}/seats, encoded once per sale.
func (r *room) seatMap() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seatJSON == nil {
		out := make([]booking.SeatStatus, len(r.seats))
		for i, s := range r.seats {
			out[i] = booking.SeatStatus{ID: s.ID, Row: s.Row, Number: s.Number, Status: "available"}
			if r.sold[i] {
				out[i].Status = "sold"
			}
		}
		r.seatJSON, _ = json.Marshal(out)
	}
	return r.seatJSON
}

// reserveBody is a reservation: seats by name, or a count the server picks.
type reserveBody struct {
	Seats []string `json:"seats"`
	Count *int     `json:"count"`
}

// order is a 201 of a reservation: the order (instant checkout: confirmed as it is made) and its ticket.
type order struct {
	booking.Reservation
	TicketURL string `json:"ticket_url"`
}

// refusal is a reservation's error answer.
type refusal struct {
	status  int
	code    string
	message string
	seats   []string
}

func badRequest(format string, args ...any) *refusal {
	return &refusal{http.StatusBadRequest, "BAD_REQUEST", "bad request: " + fmt.Sprintf(format, args...), nil}
}

// reserve is POST /api/screenings/{id}/reservations, its checks in the real server's order.
func (s *server) reserve(w http.ResponseWriter, req *http.Request) {
	bearer, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || bearer == "" {
		writeError(w, http.StatusUnauthorized, "INVALID_PASS", "the pass is missing, forged, expired or for another screening", nil)
		return
	}
	var body reserveBody
	if err := decodeStrict(w, req, maxBodyBytes, &body); err != nil || body.Count != nil && body.Seats != nil {
		bodyError(w, err, `the body must be {"seats":["A1",...]} or {"count":N}`)
		return
	}
	key := req.Header.Get("Idempotency-Key")
	if !validKey(key) {
		writeError(w, http.StatusBadRequest, "BAD_REQUEST", "Idempotency-Key must be 1 to 255 visible ASCII characters", nil)
		return
	}
	r := s.room(req.PathValue("id"))
	if r == nil {
		writeError(w, http.StatusNotFound, "UNKNOWN_SCREENING", "no such screening", nil)
		return
	}
	answer, refused, soldOut, freed := r.reserve(time.Now(), bearer, key, body)
	if refused != nil {
		writeError(w, refused.status, refused.code, refused.message, refused.seats)
		return
	}
	writeBody(w, http.StatusCreated, answer)
	for _, c := range soldOut {
		c.soldOut()
	}
	if freed {
		r.refilled()
	}
}

// reserve books what body asks for with pass: one reservation per pass, a retry with its Idempotency-Key
// answered as the first was. A 201 frees the pass's slot (freed: the caller refills it); the last seat sold
// closes the sale, and soldOut are the sockets to tell.
func (r *room) reserve(now time.Time, pass, key string, body reserveBody) (answer []byte, refused *refusal, soldOut []*client, freed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.passes[pass]
	if m == nil {
		return nil, &refusal{http.StatusUnauthorized, "INVALID_PASS", "the pass is missing, forged, expired or for another screening", nil}, nil, false
	}
	var request string
	if body.Count != nil {
		if *body.Count < 1 || *body.Count > maxSeats {
			return nil, badRequest("%d seats requested, 1 to %d per reservation", *body.Count, maxSeats), nil, false
		}
		request = "count:" + strconv.Itoa(*body.Count)
	} else {
		seats, bad := r.parseSeats(body.Seats)
		if bad != nil {
			return nil, bad, nil, false
		}
		body.Seats = seats
		request = "seats:" + strings.Join(seats, ",")
	}
	switch {
	case m.reserved && key != "" && key == m.key && request == m.request:
		return m.answer, nil, nil, false
	case m.reserved && key != "" && key == m.key:
		return nil, &refusal{http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key already reserved other seats", nil}, nil, false
	case m.reserved:
		return nil, &refusal{http.StatusGone, "PASS_SPENT", "this pass has already reserved", nil}, nil, false
	case m.state != admitted || !now.Before(m.expiresAt):
		return nil, &refusal{http.StatusUnauthorized, "INVALID_PASS", "the admission of this pass is over (it expired or was left)", nil}, nil, false
	case r.soldOut:
		return nil, &refusal{http.StatusConflict, "SOLD_OUT", "no seat is left", nil}, nil, false
	}
	var picked []int
	if body.Count != nil {
		for i := range r.seats {
			if !r.sold[i] && len(picked) < *body.Count {
				picked = append(picked, i)
			}
		}
		if len(picked) < *body.Count {
			return nil, &refusal{http.StatusConflict, "NOT_ENOUGH_SEATS", "not that many seats are free together; ask for fewer or pick them", nil}, nil, false
		}
	} else {
		var taken []string
		for _, id := range body.Seats {
			i := r.index[id]
			if r.sold[i] {
				taken = append(taken, id)
			}
			picked = append(picked, i)
		}
		if len(taken) > 0 {
			return nil, &refusal{http.StatusConflict, "SEAT_TAKEN", "a requested seat is already sold", taken}, nil, false
		}
	}

	seats := make([]string, len(picked))
	for j, i := range picked {
		r.sold[i] = true
		seats[j] = r.seats[i].ID
	}
	slices.Sort(seats)
	r.soldN += len(picked)
	r.seatJSON, r.lastSaleAt = nil, now
	r.orders++
	code := newOrderCode()
	at := now.UTC()
	answer, _ = json.Marshal(order{
		Reservation: booking.Reservation{ID: r.orders, Code: code, Status: "confirmed", Screening: r.id, Seats: seats, CreatedAt: at, ConfirmedAt: &at},
		TicketURL:   "/t/" + code,
	})
	m.reserved, m.key, m.request, m.answer = true, key, request, answer
	m.state = gone
	delete(r.active, m)
	r.freed++
	if r.soldN == len(r.seats) {
		soldOut = r.closeSale()
	}
	return answer, nil, soldOut, !r.soldOut
}

// parseSeats checks a requested seat list as booking.ParseSeats does: 1 to maxSeats seats of this
// screening, each once, sorted.
func (r *room) parseSeats(seats []string) ([]string, *refusal) {
	switch {
	case len(seats) == 0:
		return nil, badRequest("no seats requested")
	case len(seats) > maxSeats:
		return nil, badRequest("%d seats requested, at most %d per reservation", len(seats), maxSeats)
	}
	out := slices.Clone(seats)
	for _, id := range out {
		if _, ok := r.index[id]; !ok {
			return nil, badRequest("no seat %q in %s", id, r.id)
		}
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, badRequest("seat %s requested twice", out[i])
		}
	}
	return out, nil
}

// closeSale ends the sale: the line is discarded, and every socket of the screening is returned to be
// told. The caller holds r.mu.
func (r *room) closeSale() []*client {
	r.soldOut = true
	for _, m := range r.line {
		m.state = gone
	}
	r.line = nil
	clients := make([]*client, 0, len(r.clients))
	for c := range r.clients {
		clients = append(clients, c)
	}
	return clients
}

// createBody is POST /api/admin/screenings.
type createBody struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	StartsAt    time.Time `json:"starts_at"`
	SaleOpensAt time.Time `json:"sale_opens_at"`
	Rows        int       `json:"rows"`
	SeatsPerRow int       `json:"seats_per_row"`
	Seats       []string  `json:"seats"`
	Admission   *struct {
		Interval  string `json:"interval"`
		BatchSize int    `json:"batch_size"`
		MaxActive int    `json:"max_active"`
		ActiveTTL string `json:"active_ttl"`
	} `json:"admission"`
}

// adminView is the screening as the admin API answers it (a subset of the real one's fields).
type adminView struct {
	screeningInfo
	Admission adminAdmission `json:"admission"`
	SeatsSold int            `json:"seats_sold"`
}

type adminAdmission struct {
	Interval  string `json:"interval"`
	BatchSize int    `json:"batch_size"`
	MaxActive int    `json:"max_active"`
	ActiveTTL string `json:"active_ttl"`
}

// adminCreate is POST /api/admin/screenings, with the real server's rules for what the swarm's runs send.
func (s *server) adminCreate(w http.ResponseWriter, req *http.Request) {
	if s.adminKey == "" {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "Not Found", nil)
		return
	}
	if req.Header.Get("Authorization") != "Bearer "+s.adminKey {
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "the admin API needs Authorization: Bearer <admin key>", nil)
		return
	}
	var body createBody
	if err := decodeStrict(w, req, maxAdminBodyBytes, &body); err != nil {
		bodyError(w, err, "the body must be one JSON object of a screening: "+err.Error())
		return
	}
	r, err := newScreening(body)
	if err != nil {
		message := err.Error()
		var invalid *booking.InvalidError
		if errors.As(err, &invalid) {
			message = invalid.Message
		}
		writeError(w, http.StatusBadRequest, "BAD_SCREENING", message, nil)
		return
	}
	s.mu.Lock()
	_, exists := s.rooms[r.id]
	if !exists {
		s.rooms[r.id] = r
	}
	s.mu.Unlock()
	if exists {
		writeError(w, http.StatusConflict, "SCREENING_EXISTS", "a screening with this id exists already", nil)
		return
	}
	select {
	case s.created <- r:
	case <-req.Context().Done():
	}
	view := adminView{screeningInfo: r.info(time.Now()), Admission: adminAdmission{
		Interval: r.adm.interval.String(), BatchSize: r.adm.batch, MaxActive: r.adm.maxActive, ActiveTTL: r.adm.activeTTL.String(),
	}}
	writeJSON(w, http.StatusCreated, view)
}

// newScreening checks a create body and makes its screening, its seats those booking makes of it.
func newScreening(b createBody) (*room, error) {
	switch {
	case !screeningRe.MatchString(b.ID):
		return nil, errors.New("id: 1 to 64 letters, digits, _ or -")
	case b.Name == "" || len(b.Name) > 200:
		return nil, errors.New("name: 1 to 200 bytes")
	case b.StartsAt.IsZero() || b.SaleOpensAt.IsZero() || b.SaleOpensAt.After(b.StartsAt):
		return nil, errors.New("starts_at and sale_opens_at are required, sale_opens_at at or before starts_at")
	case len(b.Seats) > 0 && (b.Rows != 0 || b.SeatsPerRow != 0):
		return nil, errors.New("give either seats or rows and seats_per_row, not both")
	case len(b.Seats) > booking.MaxSeatsPerScreening:
		return nil, fmt.Errorf("%d seats: at most %d", len(b.Seats), booking.MaxSeatsPerScreening)
	}
	var seats []booking.Seat
	var err error
	if len(b.Seats) > 0 {
		seats, err = booking.SeatsFromIDs(b.Seats)
	} else {
		seats, err = booking.SeatsFromGrid(b.Rows, b.SeatsPerRow)
	}
	if err != nil {
		return nil, err
	}
	adm := admission{interval: defaultInterval, batch: defaultBatch, maxActive: defaultMaxActive, activeTTL: defaultActiveTTL}
	if a := b.Admission; a != nil {
		for _, d := range []struct {
			name, text string
			into       *time.Duration
			lo, hi     time.Duration
		}{
			{"interval", a.Interval, &adm.interval, 100 * time.Millisecond, time.Hour},
			{"active_ttl", a.ActiveTTL, &adm.activeTTL, time.Second, 24 * time.Hour},
		} {
			if d.text == "" {
				continue
			}
			v, err := time.ParseDuration(d.text)
			if err != nil || v < d.lo || v > d.hi {
				return nil, fmt.Errorf("admission %s %q: want a Go duration from %s to %s", d.name, d.text, d.lo, d.hi)
			}
			*d.into = v
		}
		switch {
		case a.BatchSize < 0 || a.BatchSize > 100_000 || a.MaxActive < 0 || a.MaxActive > 1_000_000:
			return nil, errors.New("admission batch_size 1–100,000 and max_active 1–1,000,000")
		case a.BatchSize > 0:
			adm.batch = a.BatchSize
		}
		if a.MaxActive > 0 {
			adm.maxActive = a.MaxActive
		}
	}
	return newRoom(b.ID, b.Name, b.StartsAt.UTC(), b.SaleOpensAt.UTC(), seats, adm), nil
}
