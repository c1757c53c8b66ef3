// The report of a run: what users' results add up to (outcomes, error kinds, latency percentiles), as Run
// returns it and `swarm -json` writes it.

package swarm

import (
	"math"
	"slices"
	"time"
)

// Report is what a run found. Its JSON is what `swarm -json FILE` writes.
type Report struct {
	URL          string `json:"url"`
	Screening    string `json:"screening"`
	Mode         Mode   `json:"mode"`
	Users        int    `json:"users"`
	Concurrency  int    `json:"concurrency"`
	SeatsPerUser int    `json:"seats_per_user"`
	Retries      int    `json:"retries"`
	// DurationMs is the hold's length (line mode); Leave says users sent leave before closing at its end.
	DurationMs int64 `json:"duration_ms,omitempty"`
	Leave      bool  `json:"leave,omitempty"`
	// Procs is the number of processes the users ran in; Sources the number of source addresses.
	Procs     int   `json:"procs"`
	Sources   int   `json:"sources"`
	ElapsedMs int64 `json:"elapsed_ms"`
	// Stopped is "timeout" or "interrupted" when the run ended before every user did; "" otherwise.
	Stopped  string   `json:"stopped,omitempty"`
	Outcomes Outcomes `json:"outcomes"`
	// Errors counts the error outcomes by kind, with one user's full error as an example.
	Errors map[string]ErrorKind `json:"errors,omitempty"`
	// Limits are the error outcomes the server's per-address limits refused, by the settings that did.
	Limits []LimitHit `json:"limits,omitempty"`
	// Reconnects counts the dials beyond each user's first.
	Reconnects int `json:"reconnects"`
	// Busy counts the dials the server refused BUSY (too busy to register them; they came back when told).
	Busy         int          `json:"busy"`
	Latency      Latencies    `json:"latency"`
	Registration Registration `json:"registration"`
	Push         Push         `json:"push"`
	// Pow is what the users' proofs of work cost (nil: the screening asked for none).
	Pow          *Pow         `json:"pow,omitempty"`
	Verification Verification `json:"verification"`
	// BoxOffice is the checkout's figures and the end-of-run check of the orders and webhooks (nil: an
	// instant checkout with neither a database nor a receiver to check).
	BoxOffice *BoxOffice `json:"box_office,omitempty"`
}

// BoxOffice is how the run's orders went: the users' view of their checkouts, and the database's and the
// receiver's at the end.
type BoxOffice struct {
	Checkout    string  `json:"checkout"`
	PayShare    float64 `json:"pay_share,omitempty"`
	CancelShare float64 `json:"cancel_share,omitempty"`
	PayDelayMin int64   `json:"pay_delay_min_ms,omitempty"`
	PayDelayMax int64   `json:"pay_delay_max_ms,omitempty"`
	// Holds counts the users whose reservation held an order; Paid those who sent its confirm; Confirmed
	// those it answered 200; Lapsed those it answered 409 HOLD_EXPIRED; Unpaid those who never paid;
	// Refunded the confirmed orders the operator cancelled.
	Holds     int `json:"holds"`
	Paid      int `json:"paid"`
	Confirmed int `json:"confirmed"`
	Lapsed    int `json:"lapsed"`
	Unpaid    int `json:"unpaid"`
	Refunded  int `json:"refunded"`
	// HeldWaits counts the seat-map reads again of users who found every free seat held.
	HeldWaits int `json:"held_waits"`
	// Waitlisted counts the users who stayed on the waitlist after a sold_out; Offered those offered seats.
	Waitlisted int `json:"waitlisted,omitempty"`
	Offered    int `json:"offered,omitempty"`
	// SoldOutAnswers counts the reservations answered 409 SOLD_OUT in hold checkout (the seat map read
	// after each said whether seats were only held).
	SoldOutAnswers int `json:"sold_out_answers"`
	// HoldToConfirm is from a hold's 201 to its confirm's 200, the pay delay included; ConfirmCall is the
	// confirm's round trip alone.
	HoldToConfirm Latency `json:"hold_to_confirm"`
	ConfirmCall   Latency `json:"confirm_call"`
	// ReservationsPerTicket is the reservation POSTs of the run over its tickets at the end.
	ReservationsPerTicket float64 `json:"reservations_per_ticket"`
	// SettleMs is how long the run waited after its users for the last holds to lapse (and the webhooks).
	SettleMs int64 `json:"settle_ms"`
	// SoldOutMs is from the first dial to the last confirmation, when every seat ended sold (0: not).
	SoldOutMs int64    `json:"sold_out_ms"`
	Orders    Orders   `json:"orders"`
	Webhooks  Webhooks `json:"webhooks"`
}

// summarizeBoxOffice counts the checkouts of the results.
func summarizeBoxOffice(cfg Config, results []result, rep Report) BoxOffice {
	k := cfg.Checkout
	b := BoxOffice{Checkout: k.Mode}
	if k.hold() {
		b.PayShare, b.CancelShare = k.PayShare, k.CancelShare
		b.PayDelayMin, b.PayDelayMax = k.PayDelayMin.Milliseconds(), k.PayDelayMax.Milliseconds()
	}
	var holdToConfirm, confirmCall []time.Duration
	for _, r := range results {
		b.HeldWaits += r.HeldWaits
		if r.Waitlisted {
			b.Waitlisted++
		}
		if r.Offered {
			b.Offered++
		}
		b.SoldOutAnswers += r.SoldOutAnswers
		if r.Code != "" && k.hold() {
			b.Holds++
		}
		if r.Paid {
			b.Paid++
			confirmCall = append(confirmCall, r.ConfirmCall)
		}
		if r.Confirmed {
			b.Confirmed++
			holdToConfirm = append(holdToConfirm, r.HoldToConfirm)
		}
	}
	b.Lapsed, b.Unpaid, b.Refunded = rep.Outcomes.Lapsed, rep.Outcomes.Unpaid, rep.Outcomes.Refunded
	b.HoldToConfirm, b.ConfirmCall = summarizeLatency(holdToConfirm), summarizeLatency(confirmCall)
	if rep.Outcomes.Ticket > 0 {
		b.ReservationsPerTicket = math.Round(float64(rep.Latency.Reservation.Count)/float64(rep.Outcomes.Ticket)*100) / 100
	}
	return b
}

// Outcomes counts the users by how their visit ended; they add up to Users. Held and Admitted are hold
// mode's, Ticket and GaveUp flow mode's.
type Outcomes struct {
	Ticket   int `json:"ticket"`
	SoldOut  int `json:"sold_out"`
	GaveUp   int `json:"gave_up"`
	Held     int `json:"held,omitempty"`
	Admitted int `json:"admitted,omitempty"`
	// Refunded, Lapsed and Unpaid are hold checkout's.
	Refunded int `json:"refunded,omitempty"`
	Lapsed   int `json:"lapsed,omitempty"`
	Unpaid   int `json:"unpaid,omitempty"`
	Error    int `json:"error"`
}

// ErrorKind is one kind of error outcome.
type ErrorKind struct {
	Count   int    `json:"count"`
	Example string `json:"example"`
}

// Latencies are the three measured waits.
type Latencies struct {
	// Connect is from dialing to the first message, once per user that got one.
	Connect Latency `json:"connect"`
	// Queue is from the first message to admitted, once per admitted user.
	Queue Latency `json:"queue"`
	// Reservation is the round trip of every POST of a reservation.
	Reservation Latency `json:"reservation"`
}

// Latency summarizes samples by nearest-rank percentiles and the maximum, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// summarize counts the results of a run, in whichever processes they ran; the verification is left to the
// caller.
func summarize(cfg Config, results []result, elapsed time.Duration) Report {
	rep := Report{
		URL: cfg.URL, Screening: cfg.Screening, Mode: cfg.Mode, Users: cfg.Users, Concurrency: cfg.Concurrency,
		SeatsPerUser: cfg.Seats, Retries: cfg.Retries, DurationMs: cfg.Duration.Milliseconds(), Leave: cfg.Leave,
		Procs: cfg.Procs, Sources: cfg.Sources, ElapsedMs: elapsed.Milliseconds(),
	}
	var connect, inQueue, reservation []time.Duration
	for _, r := range results {
		rep.count(r)
		rep.Reconnects += r.Reconnects
		rep.Busy += r.Busy
		if r.Connected {
			connect = append(connect, r.Connect)
		}
		if r.WasAdmitted {
			inQueue = append(inQueue, r.InQueue)
		}
		reservation = append(reservation, r.Reservations...)
	}
	rep.Latency = Latencies{Connect: summarizeLatency(connect), Queue: summarizeLatency(inQueue), Reservation: summarizeLatency(reservation)}
	rep.Limits = summarizeLimits(results)
	rep.Registration = summarizeRegistration(results)
	rep.Push = summarizePush(results)
	rep.Pow = summarizePow(cfg, results)
	return rep
}

// count adds r's outcome, and its error if it is one.
func (rep *Report) count(r result) {
	switch r.Outcome {
	case Ticket:
		rep.Outcomes.Ticket++
	case SoldOut:
		rep.Outcomes.SoldOut++
	case GaveUp:
		rep.Outcomes.GaveUp++
	case Held:
		rep.Outcomes.Held++
	case Admitted:
		rep.Outcomes.Admitted++
	case Refunded:
		rep.Outcomes.Refunded++
	case Lapsed:
		rep.Outcomes.Lapsed++
	case Unpaid:
		rep.Outcomes.Unpaid++
	default:
		rep.Outcomes.Error++
		if rep.Errors == nil {
			rep.Errors = map[string]ErrorKind{}
		}
		k := rep.Errors[r.ErrKind]
		k.Count++
		if k.Example == "" {
			k.Example = r.ErrText
		}
		rep.Errors[r.ErrKind] = k
	}
}

func summarizeLatency(samples []time.Duration) Latency {
	sorted, maxMs := sortedSamples(samples)
	return Latency{
		Count: len(sorted),
		P50Ms: millis(percentile(sorted, 50)),
		P95Ms: millis(percentile(sorted, 95)),
		P99Ms: millis(percentile(sorted, 99)),
		MaxMs: maxMs,
	}
}

// sortedSamples is a sorted copy of samples and the largest in milliseconds (0 for none).
func sortedSamples(samples []time.Duration) ([]time.Duration, float64) {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	if len(sorted) == 0 {
		return sorted, 0
	}
	return sorted, millis(sorted[len(sorted)-1])
}

// percentile is the nearest-rank p-th percentile of sorted: the smallest sample with at least p% of the
// samples at or below it. It is 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}
