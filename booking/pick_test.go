// The promises of pickBest: adjacent seats when a row has them, the middle of the house first, the fallbacks
// in their order, and always exactly n free, distinct seats (or nil), checked against a brute-force reading
// of the rules over random houses.

package booking

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// takenSet is an unavailable callback over a list of ids.
func takenSet(ids ...string) func(string) bool {
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return func(id string) bool { return set[id] }
}

func TestPickBestAdjacentInTheMiddleRowNearItsCentre(t *testing.T) {
	// Five rows A–E of 10: C is the middle row; a row of 1..10 has its centre at 5.5, and of the two blocks
	// of three equally near it (4–6, 5–7) the lower comes first.
	got := pickBest(Grid(5, 10), takenSet(), 3)
	if want := []string{"C4", "C5", "C6"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(5×10, none taken, 3) = %v, want %v", got, want)
	}
	got = pickBest(Grid(5, 10), takenSet(), 2)
	if want := []string{"C5", "C6"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(5×10, none taken, 2) = %v, want %v", got, want)
	}
}

func TestPickBestEvenRowsPreferTheRowBehindTheMiddle(t *testing.T) {
	// Four rows: B and C are equally near the middle; C, further back, comes first.
	got := pickBest(Grid(4, 6), takenSet(), 2)
	if want := []string{"C3", "C4"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(4×6, none taken, 2) = %v, want %v", got, want)
	}
	got = pickBest(Grid(4, 6), takenSet("C1", "C2", "C3", "C4", "C5"), 2)
	if want := []string{"B3", "B4"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(4×6, C nearly full, 2) = %v, want %v", got, want)
	}
}

func TestPickBestBlockMovesOffCentreRatherThanSplit(t *testing.T) {
	// C5 taken: the nearest block of three in C is 6–8 (centre 7, 1.5 from 5.5), not 2–4 (centre 3, 2.5
	// away); the block shifts within the middle row rather than leave it.
	got := pickBest(Grid(5, 10), takenSet("C5"), 3)
	if want := []string{"C6", "C7", "C8"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(C5 taken, 3) = %v, want %v", got, want)
	}
	got = pickBest(Grid(5, 10), takenSet("C4"), 3)
	if want := []string{"C5", "C6", "C7"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(C4 taken, 3) = %v, want %v", got, want)
	}
}

func TestPickBestAdjacentInAnOuterRowBeatsScatteredInTheMiddle(t *testing.T) {
	// The middle row C has every other seat taken; B and D have a pair; D (further back) wins the tie.
	taken := []string{"C2", "C4", "C6", "C8", "C10"}
	for _, row := range []string{"A", "B", "D", "E"} {
		for n := 1; n <= 10; n++ {
			if (row == "B" || row == "D") && (n == 9 || n == 10) {
				continue
			}
			taken = append(taken, fmt.Sprintf("%s%d", row, n))
		}
	}
	got := pickBest(Grid(5, 10), takenSet(taken...), 2)
	if want := []string{"D10", "D9"}; !slices.Equal(got, want) {
		t.Errorf("pickBest = %v, want %v", got, want)
	}
}

func TestPickBestGapInNumbersIsNotAdjacent(t *testing.T) {
	// A listed row with no seat 3: 2 and 4 are not side by side.
	seats, err := SeatsFromIDs([]string{"A1", "A2", "A4", "A5"})
	if err != nil {
		t.Fatal(err)
	}
	got := pickBest(seats, takenSet("A1", "A5"), 2)
	if want := []string{"A2", "A4"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(A2, A4 free, no A3) = %v, want %v (not adjacent, the only two)", got, want)
	}
}

func TestPickBestFallsBackToOneRowNearItsCentre(t *testing.T) {
	// Every other seat taken everywhere: no pair is adjacent; the middle row's two free seats nearest its
	// centre (5.5): C5 (odd seats are free) and C7 are 0.5 and 1.5 away, C3 2.5.
	var taken []string
	for _, s := range Grid(5, 10) {
		if s.Number%2 == 0 {
			taken = append(taken, s.ID)
		}
	}
	got := pickBest(Grid(5, 10), takenSet(taken...), 2)
	if want := []string{"C5", "C7"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(alternate seats, 2) = %v, want %v", got, want)
	}
}

func TestPickBestFallsBackToTheBestSeatsOverall(t *testing.T) {
	// One free seat per row: no row has two; the middle row's seat, then the next row's (D, behind, first).
	got := pickBest(Grid(5, 3), func(id string) bool { return id[1] != '2' }, 3)
	if want := []string{"B2", "C2", "D2"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(one free per row, 3) = %v, want %v", got, want)
	}
	got = pickBest(Grid(5, 3), func(id string) bool { return id[1] != '2' }, 2)
	if want := []string{"C2", "D2"}; !slices.Equal(got, want) {
		t.Errorf("pickBest(one free per row, 2) = %v, want %v", got, want)
	}
}

func TestPickBestNilWhenTooFewAreFree(t *testing.T) {
	got := pickBest(Grid(2, 2), takenSet("A1", "B2"), 3)
	if got != nil {
		t.Errorf("pickBest(2 free, 3) = %v, want nil", got)
	}
	if got := pickBest(Grid(2, 2), takenSet(), 5); got != nil {
		t.Errorf("pickBest(4 seats, 5) = %v, want nil", got)
	}
	if got := pickBest(Grid(2, 2), takenSet(), 0); got != nil {
		t.Errorf("pickBest(n = 0) = %v, want nil", got)
	}
	if got := pickBest(nil, takenSet(), 1); got != nil {
		t.Errorf("pickBest(no seats) = %v, want nil", got)
	}
}

func TestPickBestAsksEachSeatOnce(t *testing.T) {
	asked := map[string]int{}
	pickBest(Grid(20, 20), func(id string) bool { asked[id]++; return true }, 2)
	for id, n := range asked {
		if n != 1 {
			t.Errorf("unavailable(%s) asked %d times, want once", id, n)
		}
	}
	if len(asked) != 400 {
		t.Errorf("a full house: %d seats asked, want all 400", len(asked))
	}
	clear(asked)
	pickBest(Grid(20, 20), func(id string) bool { asked[id]++; return false }, 2)
	if len(asked) != 20 {
		t.Errorf("an empty house: %d seats asked, want the middle row's 20", len(asked))
	}
}

// TestPickBestAlwaysExactlyNFreeDistinctSeatsByTheRules draws houses (grids, some with seats missing, as a
// listed catalog may have), taken seats and a count, and checks the answer against pickReference.
func TestPickBestAlwaysExactlyNFreeDistinctSeatsByTheRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.IntRange(1, 9).Draw(t, "rows")
		perRow := rapid.IntRange(1, 12).Draw(t, "perRow")
		grid := Grid(rows, perRow)
		kept := rapid.SliceOfN(rapid.IntRange(0, 9), len(grid), len(grid)).Draw(t, "kept")
		gaps := rapid.Bool().Draw(t, "gaps")
		var seats []Seat
		for i, s := range grid {
			if !gaps || kept[i] > 0 {
				seats = append(seats, s)
			}
		}
		density := rapid.IntRange(0, 100).Draw(t, "density")
		rolls := rapid.SliceOfN(rapid.IntRange(0, 99), len(seats), len(seats)).Draw(t, "rolls")
		taken := map[string]bool{}
		for i, s := range seats {
			taken[s.ID] = rolls[i] < density
		}
		n := rapid.IntRange(1, 6).Draw(t, "n")

		got := pickBest(seats, func(id string) bool { return taken[id] }, n)
		free := 0
		for _, s := range seats {
			if !taken[s.ID] {
				free++
			}
		}
		if free < n {
			if got != nil {
				t.Fatalf("pickBest = %v with %d free, want nil for %d", got, free, n)
			}
			return
		}
		if len(got) != n || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != n {
			t.Fatalf("pickBest = %v, want %d distinct ids, sorted", got, n)
		}
		inCatalog := map[string]bool{}
		for _, s := range seats {
			inCatalog[s.ID] = true
		}
		for _, id := range got {
			if !inCatalog[id] || taken[id] {
				t.Fatalf("pickBest = %v: %s is not a free seat of the catalog", got, id)
			}
		}
		if want := pickReference(seats, taken, n); !slices.Equal(got, want) {
			t.Fatalf("pickBest = %v, want %v (the rules read by brute force)", got, want)
		}
	})
}

// pickReference reads pickBest's rules the slow way: every candidate listed and ranked.
func pickReference(seats []Seat, taken map[string]bool, n int) []string {
	var rowOf []string
	for _, s := range seats {
		if len(rowOf) == 0 || rowOf[len(rowOf)-1] != s.Row {
			rowOf = append(rowOf, s.Row)
		}
	}
	rank := map[string][2]int{} // row → (doubled distance from the middle, further back first)
	centre2 := map[string]int{}
	for i, row := range rowOf {
		rank[row] = [2]int{abs(2*i - (len(rowOf) - 1)), -i}
		lo, hi := 10000, 0
		for _, s := range seats {
			if s.Row == row {
				lo, hi = min(lo, s.Number), max(hi, s.Number)
			}
		}
		centre2[row] = lo + hi
	}
	seatKey := func(s Seat) []int {
		return []int{rank[s.Row][0], rank[s.Row][1], abs(2*s.Number - centre2[s.Row]), s.Number}
	}
	freeAt := map[[2]any]bool{}
	var free []Seat
	for _, s := range seats {
		if !taken[s.ID] {
			free = append(free, s)
			freeAt[[2]any{s.Row, s.Number}] = true
		}
	}
	// Adjacent blocks: a block starting at each free seat, if the next n-1 numbers are free in its row.
	var best []int
	var bestStart Seat
	for _, s := range free {
		ok := true
		for k := 1; k < n; k++ {
			ok = ok && freeAt[[2]any{s.Row, s.Number + k}]
		}
		key := []int{rank[s.Row][0], rank[s.Row][1], abs(2*s.Number + n - 1 - centre2[s.Row]), s.Number}
		if ok && (best == nil || slices.Compare(key, best) < 0) {
			best, bestStart = key, s
		}
	}
	if best != nil {
		var out []string
		for k := range n {
			out = append(out, fmt.Sprintf("%s%d", bestStart.Row, bestStart.Number+k))
		}
		slices.Sort(out)
		return out
	}
	slices.SortFunc(free, func(a, b Seat) int { return slices.Compare(seatKey(a), seatKey(b)) })
	count := map[string]int{}
	for _, s := range free {
		count[s.Row]++
	}
	// The most preferred row with n free, else the best seats overall.
	pool := free
	for _, s := range free { // in preference order, so the first row met with n free is the best one
		if count[s.Row] >= n {
			pool = slices.DeleteFunc(slices.Clone(free), func(o Seat) bool { return o.Row != s.Row })
			break
		}
	}
	var out []string
	for _, s := range pool[:n] {
		out = append(out, s.ID)
	}
	slices.Sort(out)
	return out
}

// BenchmarkPickBest picks 4 seats of a 10,000-seat house (100 rows of 100), its taken seats in a map as the
// caller keeps them: empty, half taken at random, every other seat taken (no pair anywhere: every seat is
// looked at), and all but a few taken.
func BenchmarkPickBest(b *testing.B) {
	seats := Grid(100, 100)
	rng := rand.New(rand.NewPCG(1, 2))
	houses := []struct {
		name  string
		taken func(Seat) bool
	}{
		{"empty", func(Seat) bool { return false }},
		{"half", func(Seat) bool { return rng.IntN(2) == 0 }},
		{"alternate", func(s Seat) bool { return s.Number%2 == 0 }},
		{"nearly_full", func(s Seat) bool { return s.Number < 99 }},
	}
	for _, h := range houses {
		taken := map[string]bool{}
		for _, s := range seats {
			if h.taken(s) {
				taken[s.ID] = true
			}
		}
		unavailable := func(id string) bool { return taken[id] }
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := pickBest(seats, unavailable, 4); len(got) != 4 {
					b.Fatalf("pickBest = %v, want 4 seats", got)
				}
			}
		})
	}
}
