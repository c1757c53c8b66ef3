// Tests of the seat news: changes gathered per screening, the latest state of a seat winning, in the order
// seats first changed.

package booking

import (
	"reflect"
	"testing"

	"github.com/waitroom/waitroom/queue"
)

func TestSeatNewsGathersTheLatestStateOfEachSeat(t *testing.T) {
	var n seatNews
	n.add("s1", []string{"A1", "A2"}, StatusHeld)
	n.add("s2", []string{"B1"}, StatusConfirmed)
	n.add("s1", []string{"A1"}, StatusExpired)
	n.add("s1", []string{"A3"}, StatusConfirmed)
	got := n.take()
	want := map[string][]queue.SeatChange{
		"s1": {{ID: "A1", Status: "available"}, {ID: "A2", Status: "held"}, {ID: "A3", Status: "sold"}},
		"s2": {{ID: "B1", Status: "sold"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("take = %v, want %v", got, want)
	}
	if again := n.take(); again != nil {
		t.Errorf("take again = %v, want nothing", again)
	}
}
