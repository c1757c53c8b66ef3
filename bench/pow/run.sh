#!/bin/sh
# bench/pow/run.sh: what a proof of work costs a crowd. For each cost in COSTS (the mean number of key
# derivations a user must try; pow.iterations PBKDF2 iterations each), a fresh screening with a seat for
# every user gets that pow_cost (admin API), and USERS swarm users arrive at once in flow mode: each fetches
# a challenge and solves it (one worker, at most one solve per core of this machine at once) before it
# dials, waits in line, reserves and leaves. Printed per cost: the swarm's solve median and p90, the
# registration rate (users/s from the first challenge fetch to the last first queued), the burst (ms from
# the first dial to the last first queued), the errors. Server, backends and swarm share this machine's
# cores: quote the figures with the load and the cores it prints.
#
#   bench/pow/run.sh                                  # USERS=1000 COSTS="0 100 1000 5000" BACKEND=embedded
#   BACKEND=real bench/pow/run.sh                     # the real Redis and PostgreSQL, own prefix and schema
#
# Settings (environment): USERS COSTS ITERATIONS BACKEND (embedded or real) SWARM_TIMEOUT PORT OUT.
# Stops by itself: each swarm run is bounded by its -timeout, and every process started here is stopped on
# exit.
set -eu
USERS=${USERS:-1000}
COSTS=${COSTS:-0 100 1000 5000}
ITERATIONS=${ITERATIONS:-1000}
BACKEND=${BACKEND:-embedded}
SWARM_TIMEOUT=${SWARM_TIMEOUT:-900s}
PORT=${PORT:-18320}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(mktemp -d)
OUT=${OUT:-${TMPDIR:-/tmp}/wrbench-pow}
rand() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
TAG=$(rand 4)
ADMIN_KEY=bench-pow-admin-$(rand 12)
BASE=http://127.0.0.1:$PORT
PREFIX=benchpow$TAG:
SCHEMA=benchpow_$TAG
psql_admin() { psql -h 127.0.0.1 -U postgres -qAtX -v ON_ERROR_STOP=1 "$@"; }
cleanup() {
	if [ -f "$DIR/waitroom.pid" ]; then
		pid=$(cat "$DIR/waitroom.pid")
		kill "$pid" 2>/dev/null || true
		i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$pid" 2>/dev/null || true
	fi
	if [ "$BACKEND" = real ]; then
		redis-cli -h 127.0.0.1 --scan --pattern "$PREFIX*" | xargs -r redis-cli -h 127.0.0.1 del >/dev/null 2>&1 || true
		psql_admin -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" test >/dev/null 2>&1 || true
	fi
	cp "$DIR"/*.json "$DIR"/*.log "$OUT"/ 2>/dev/null || true
	rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case $BACKEND in
embedded) BACKEND_ENV="WAITROOM_DATA_DIR=$DIR/data" ;;
real)
	PGOPTIONS='--client-min-messages=warning' psql_admin -c "CREATE SCHEMA $SCHEMA" test
	BACKEND_ENV="WAITROOM_REDIS_ADDR=127.0.0.1:6379 WAITROOM_REDIS_PREFIX=$PREFIX WAITROOM_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=$SCHEMA WAITROOM_PASS_SECRET=bench-pow-pass-$(rand 16)"
	;;
*) echo "BACKEND=$BACKEND: want embedded or real" >&2; exit 2 ;;
esac
mkdir -p "$DIR/data" "$OUT"
(cd "$ROOT" && go build -o "$DIR/waitroom" ./cmd/waitroom && go build -o "$DIR/swarm" ./cmd/swarm)
# Admission lets 100 in every 100 ms, at most 200 at once: the crowd registers at once, then reserves at a
# pace the box office keeps up with, so that the errors are the arrival's, not a storm of reservations'.
# shellcheck disable=SC2086 # BACKEND_ENV is a list of assignments
env $BACKEND_ENV WAITROOM_HTTP_ADDR=127.0.0.1:$PORT WAITROOM_HTTP_OPS_ADDR=127.0.0.1:$((PORT + 1)) WAITROOM_ADMIN_KEY="$ADMIN_KEY" \
	WAITROOM_DEMO_ENABLED=false WAITROOM_LOG_LEVEL=warn WAITROOM_POW_COST=0 WAITROOM_POW_ITERATIONS="$ITERATIONS" \
	WAITROOM_POW_SECRET="bench-pow-secret-$(rand 16)" \
	WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=0 WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0 \
	WAITROOM_ADMISSION_INTERVAL=100ms WAITROOM_ADMISSION_BATCH_SIZE=100 WAITROOM_ADMISSION_MAX_ACTIVE=200 \
	"$DIR/waitroom" -config "" >"$DIR/waitroom.log" 2>&1 &
echo $! >"$DIR/waitroom.pid"
i=0
until curl -sf -o /dev/null "$BASE/healthz"; do
	i=$((i + 1)); [ $i -lt 300 ] || { echo "the server did not start" >&2; tail -c 2000 "$DIR/waitroom.log" >&2; exit 1; }
	sleep 0.1
done

admin() { # method path body
	status=$(curl -sS --max-time 10 -o "$DIR/admin.json" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $ADMIN_KEY" \
		-H 'Content-Type: application/json' "$BASE/api/admin$2" -d "$3")
	case $status in 2??) ;; *) echo "$1 $2 answered $status: $(cat "$DIR/admin.json")" >&2; exit 1 ;; esac
}

echo "proof of work: $USERS users at once per cost, pow.iterations $ITERATIONS, backend $BACKEND, swarm -timeout $SWARM_TIMEOUT"
echo "machine: $(nproc) cores ($(lscpu | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2}')), load at start $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%6s %6s %10s %10s %10s %12s %10s %10s %7s %6s %s\n' cost users solve_p50 solve_p90 solve_max reg_users/s burst_ms arrival_ms errors load elapsed_s
ROWS=$(((USERS + 49) / 50))
for cost in $COSTS; do
	id=pow$cost-$TAG
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	starts=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
	admin POST /screenings "$(printf '{"id":"%s","name":"Proof of work %s","starts_at":"%s","sale_opens_at":"%s","rows":%d,"seats_per_row":50}' \
		"$id" "$cost" "$starts" "$now" "$ROWS")"
	admin PATCH "/screenings/$id/admission" "{\"pow_cost\": $cost}"
	sleep 1.1 # the entry rules an instance keeps live a second
	"$DIR/swarm" -url "$BASE" -screening "$id" -users "$USERS" -retries 10 -timeout "$SWARM_TIMEOUT" \
		-json "$DIR/cost$cost.json" >"$DIR/swarm$cost.log" 2>&1 || true
	if [ ! -s "$DIR/cost$cost.json" ]; then
		echo "cost $cost: the swarm wrote no report: $(tail -c 1000 "$DIR/swarm$cost.log")" >&2
		continue
	fi
	jq -r --arg load "$(cut -d' ' -f1 /proc/loadavg)" '[.pow.cost // 0, .users,
		(if .pow then "\(.pow.solves.p50_ms)" else "-" end), (if .pow then "\(.pow.solves.p90_ms)" else "-" end),
		(if .pow then "\(.pow.solves.max_ms)" else "-" end),
		.registration.per_second, .registration.burst_ms, .registration.arrival_ms,
		(.outcomes.error + (.pow.challenge_failures // 0)), $load, (.elapsed_ms / 100 | floor) / 10] | @tsv' "$DIR/cost$cost.json" |
		awk -F'\t' '{printf "%6s %6s %10s %10s %10s %12s %10s %10s %7s %6s %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}'
	jq -r '(.errors // {}) | to_entries[] | "       error \(.key): \(.value.count)"' "$DIR/cost$cost.json"
	stopped=$(jq -r '.stopped // ""' "$DIR/cost$cost.json")
	[ -z "$stopped" ] || echo "       (cost $cost stopped early: $stopped; registered $(jq .registration.registered "$DIR/cost$cost.json") of $USERS)"
done
echo "(solve: ms from a user's challenge fetched to solved, one worker; errors: users in error plus failed challenge fetches;"
echo " the swarm's reports are cost<N>.json in OUT=$OUT)"
