// seats.js: the one order of seat ids on every page, as the server sorts them (booking.CompareSeatIDs) and
// the seat map lays them out: by row, a shorter label first (A … Z, then AA …), then by number, so D9 comes
// before D10.

// seatOrder compares two seat ids in that order, for Array.prototype.sort; an id that is not a row and a
// number sorts after every seat, by text.
export function seatOrder(a, b) {
  const ma = /^([A-Z]+)(\d+)$/.exec(String(a));
  const mb = /^([A-Z]+)(\d+)$/.exec(String(b));
  if (!ma || !mb) {
    if (ma || mb) return ma ? -1 : 1;
    return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
  }
  if (ma[1] !== mb[1]) return ma[1].length - mb[1].length || (ma[1] < mb[1] ? -1 : 1);
  return Number(ma[2]) - Number(mb[2]);
}

// sortedSeats is a copy of seats, as strings, in seat order.
export const sortedSeats = (seats) => (Array.isArray(seats) ? seats.map(String).sort(seatOrder) : []);
