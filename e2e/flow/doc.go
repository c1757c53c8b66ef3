// Package flow holds the end-to-end tests of one server instance, run in the test's process
// (apptest.Start) on the embedded backends and, when they answer, the real ones: the whole path of a
// client of docs/protocol.md from its first socket to a reservation, a sell-out told to the line, an
// operator opening a sale with no restart, an abandoned user leaving the line, a reservation refilling its
// slot at once, the database pool opened ahead of demand, and a swarm of virtual users selling each seat
// once.
package flow
