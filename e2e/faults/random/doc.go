// Package random is the randomized fault run (make test-faults, build tag faults): three server processes
// share a Redis and a PostgreSQL, each behind a fault proxy, while a seeded schedule resets and cuts both
// stores, restarts Redis empty once, kills one instance and pauses others past their seat locks' lease.
// The history is then checked against the guarantees of docs/reliability.md. WAITROOM_FAULT_SEED=<seed>
// replays a schedule.
package random
