// Package random is the randomized fault run (make test-faults, build tag faults): three server processes
// share a Redis and a PostgreSQL, each behind a fault proxy, while a seeded schedule resets and cuts both
// stores, restarts Redis empty, kills one instance and pauses others past their seat locks' lease. The
// users hold seats in hold mode and pay, walk away, cancel or are refunded. The history, and the orders,
// seats and webhooks PostgreSQL has once the holds lapsed, are then checked against the guarantees of
// docs/reliability.md, and the admission log PostgreSQL has against what the users were told
// (log_test.go). WAITROOM_FAULT_SEED=<seed> replays a schedule; WAITROOM_SOAK=1 runs the soak
// (make soak-faults).
package random
