// Choosing the best free seats of a screening for a reservation by count: adjacent in one row when it can,
// in the row nearest the middle of the house, as near the row's centre as it can.

package booking

import (
	"slices"
	"sort"
)

// The order of preference pickBest keeps, in seat numbers and row places, so every choice is deterministic:
//
//   - The middle of the house is the middle of the rows in catalog order: row index (rows-1)/2. A row's
//     distance from it is how many rows away it is; of two rows equally near (an even number of rows), the
//     one further back (later in the catalog, further from the screen) comes first: a seat a little behind
//     the middle sees the whole screen, one in front of it less so.
//   - A row's centre is halfway between its first and last seat numbers in the catalog (taken or not),
//     so a row of 1..10 has its centre between 5 and 6. A block's (or a seat's) distance from it is measured
//     in seat numbers; of two equally near, the lower-numbered comes first.
//   - Distances are kept doubled (2×index against rows-1, first+last against lo+hi), so they stay integers.

// Seat states, learnt once per seat: the unavailable callback may be a Redis-backed set's lookup.
const (
	seatUnknown uint8 = iota
	seatFree
	seatTaken
)

// pickRow is one row of the catalog: seats[start:end], with twice its centre in seat numbers and how many of
// its seats are free (-1 until countFree has looked at them all).
type pickRow struct {
	start, end int
	centre2    int
	free       int
}

// picker is one pickBest call: the catalog's rows in order of preference and what it learnt of each seat.
type picker struct {
	seats       []Seat
	unavailable func(id string) bool
	state       []uint8
	rows        []pickRow
	n           int
}

// pickBest chooses n free seats of a catalog (seats in catalog order: a row's seats together, numbered upward)
// for a reservation by count, and returns their ids sorted, or nil when fewer than n are free (or n < 1).
// In order of preference: n adjacent seats (consecutive numbers, all free) in one row, in the row nearest
// the middle of the house and, within it, the block whose centre is nearest the row's centre; failing that,
// the n free seats nearest the centre of the nearest row that has n free; failing that, the best free seats
// overall, row by row from the nearest. It asks unavailable about a seat at most once, and only where it
// must: with free blocks in the middle rows, a fraction of one row of a 10,000-seat house.
func pickBest(seats []Seat, unavailable func(id string) bool, n int) []string {
	if n < 1 || n > len(seats) {
		return nil
	}
	p := &picker{seats: seats, unavailable: unavailable, state: make([]uint8, len(seats)), n: n}
	p.rows = preferredRows(seats)
	for _, r := range p.rows {
		if first := p.bestBlock(r); first >= 0 {
			block := make([]int, n)
			for j := range block {
				block[j] = first + j
			}
			return p.ids(block)
		}
	}
	for k := range p.rows {
		if r := &p.rows[k]; p.countFree(r) >= n {
			return p.ids(p.nearestFree(*r, n))
		}
	}
	// Every row's free seats are counted now.
	return p.overall()
}

// preferredRows splits the catalog into its rows and orders them by distance from the middle of the house.
func preferredRows(seats []Seat) []pickRow {
	var rows []pickRow
	for i := 0; i < len(seats); {
		j := rowEnd(seats, i)
		rows = append(rows, pickRow{start: i, end: j, centre2: seats[i].Number + seats[j-1].Number, free: -1})
		i = j
	}
	last := len(rows) - 1
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if da, db := abs(2*a-last), abs(2*b-last); da != db {
			return da - db
		}
		return b - a // the row further back first
	})
	out := make([]pickRow, len(rows))
	for i, r := range order {
		out[i] = rows[r]
	}
	return out
}

// rowEnd returns the end of the row that starts at seats[i]. A catalog keeps a row's seats together, so the
// end is found by galloping, in a few dozen comparisons for a row of 100 rather than one per seat: the
// scan of a 10,000-seat catalog was most of an easy pick's time.
func rowEnd(seats []Seat, i int) int {
	row, lo, step := seats[i].Row, i, 1 // seats[lo] is in the row
	for lo+step < len(seats) && seats[lo+step].Row == row {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(seats)) // seats[hi] is in another row, or hi is the end
	return lo + 1 + sort.Search(hi-lo-1, func(k int) bool { return seats[lo+1+k].Row != row })
}

// free reports whether seat i is free, asking unavailable the first time only.
func (p *picker) free(i int) bool {
	if p.state[i] == seatUnknown {
		p.state[i] = seatFree
		if p.unavailable(p.seats[i].ID) {
			p.state[i] = seatTaken
		}
	}
	return p.state[i] == seatFree
}

// beside reports whether seat i+1 sits right beside seat i: the same row, the next number.
func (p *picker) beside(i int) bool {
	return p.seats[i+1].Number == p.seats[i].Number+1 && p.seats[i+1].Row == p.seats[i].Row
}

// bestBlock returns where row r's best block of n adjacent free seats starts, or -1 if it has none. It
// probes every n-th seat: each block of n holds one of them, so a taken probe rules out the n seats up to
// it, and a free one is grown into its run of adjacent free seats, whose blocks are the candidates.
func (p *picker) bestBlock(r pickRow) int {
	best, bestDist := -1, 0
	for i := r.start + p.n - 1; i < r.end; {
		if !p.free(i) {
			i += p.n
			continue
		}
		lo, hi := i, i
		for lo > r.start && p.beside(lo-1) && p.free(lo-1) {
			lo--
		}
		for hi+1 < r.end && p.beside(hi) && p.free(hi+1) {
			hi++
		}
		for first := lo; first+p.n-1 <= hi; first++ {
			if d := abs(p.seats[first].Number + p.seats[first+p.n-1].Number - r.centre2); best < 0 || d < bestDist {
				best, bestDist = first, d
			}
		}
		i = hi + p.n // seat hi+1 is taken or not beside hi: the next block ends n past it at the earliest
	}
	return best
}

// countFree counts row r's free seats, looking at every one, once.
func (p *picker) countFree(r *pickRow) int {
	if r.free < 0 {
		r.free = 0
		for i := r.start; i < r.end; i++ {
			if p.free(i) {
				r.free++
			}
		}
	}
	return r.free
}

// nearestFree returns the indices of row r's k free seats nearest its centre (the lower number first of two
// equally near). countFree has looked at every seat of r.
func (p *picker) nearestFree(r pickRow, k int) []int {
	free := make([]int, 0, r.free)
	for i := r.start; i < r.end; i++ {
		if p.state[i] == seatFree {
			free = append(free, i)
		}
	}
	dist := func(i int) int { return abs(2*p.seats[i].Number - r.centre2) }
	slices.SortFunc(free, func(a, b int) int {
		if da, db := dist(a), dist(b); da != db {
			return da - db
		}
		return p.seats[a].Number - p.seats[b].Number
	})
	return free[:k]
}

// overall returns the best n free seats row by row: every free seat of the nearest rows, then the seats
// nearest the centre of the next row until there are n; nil when fewer than n are free.
func (p *picker) overall() []string {
	total := 0
	for _, r := range p.rows {
		total += r.free
	}
	if total < p.n {
		return nil
	}
	chosen := make([]int, 0, p.n)
	for _, r := range p.rows {
		if r.free == 0 {
			continue
		}
		chosen = append(chosen, p.nearestFree(r, min(r.free, p.n-len(chosen)))...)
		if len(chosen) == p.n {
			break
		}
	}
	return p.ids(chosen)
}

// ids returns the ids of the seats at indices, sorted as booking sorts a request's seats.
func (p *picker) ids(indices []int) []string {
	out := make([]string, len(indices))
	for i, at := range indices {
		out[i] = p.seats[at].ID
	}
	sort.Strings(out)
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
