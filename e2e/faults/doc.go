// Package faults breaks the server's backends under a running sale and checks it fails closed and
// recovers (docs/reliability.md): Redis and PostgreSQL behind fault proxies (testenv.Proxy) that reset,
// cut or slow every connection, a Redis restarted empty, and an admission whose publisher died. Each test
// runs one server in its process (apptest.Start) on the real backends or a redis-server of its own. The
// randomized schedule over several processes is in package faults/random (make test-faults).
package faults
