#!/usr/bin/env bash
# The box office in hold mode (docs/benchmarks.md, "The box office in hold mode (issue 21)"): the seed-1
# crowd (USERS 30,000, CONCURRENCY 5,000 at a time, one seat each, 1,000 seats, admission every 1 s for up
# to 300 with at most 1,000 admitted) on a screening that sells in hold checkout: a reservation holds its
# seat for HOLD_TTL while the buyer pays; PAY_SHARE of the buyers confirm it after PAY_DELAY, the others let
# it lapse; the operator refunds CANCEL_SHARE of the payers. One server process on its own Redis (started
# here) and its own PostgreSQL database (dropped and created here), its webhooks pointed at the swarm's
# receiver.
#
#   bench/boxoffice/run.sh            or: make bench-boxoffice;  USERS=3000 ROWS=4 bench/boxoffice/run.sh
#
# It checks, and exits non-zero if any check fails: the swarm's own verification (the seat map against the
# tickets; in PostgreSQL every seat in exactly one live confirmed order or in none, no order still held, no
# seat in two live orders, each user's order ending as the user saw it, every transition in the webhook
# outbox; with WEBHOOKS_EXPECTED=true every outbox message received and well signed); no error; every user
# ended with a ticket, sold_out or gave_up, or with a refund or a lapsed hold. Times are reported, not
# asserted.
#
# Settings (environment): USERS CONCURRENCY ROWS SEATS_PER_ROW INTERVAL BATCH MAX_ACTIVE ACTIVE_TTL RETRIES
# SOURCES HOLD_TTL PAY_SHARE CANCEL_SHARE PAY_DELAY HELD_WAIT WAITLIST OFFER_TTL WAITLIST_WAIT WEBHOOKS_EXPECTED SETTLE SWARM_TIMEOUT REDIS_PORT PORT
# WEBHOOK_PORT OUT, and SWARM_ARGS for more flags of the swarm (SWARM_ARGS=-best: each user asks for the
# best seat, {"count": 1}, instead of naming one).
#
# Stops by itself: every wait is bounded, the swarm's run by its -timeout, and every process started here
# is stopped on exit.

# One compound command, read whole before it runs: an edit of this file during a run cannot change the run.
{
set -euo pipefail
cd "$(dirname "$0")/../.."
USERS=${USERS:-30000}
CONCURRENCY=${CONCURRENCY:-5000}
ROWS=${ROWS:-40}
SEATS_PER_ROW=${SEATS_PER_ROW:-25}
INTERVAL=${INTERVAL:-1s}
BATCH=${BATCH:-300}
MAX_ACTIVE=${MAX_ACTIVE:-1000}
ACTIVE_TTL=${ACTIVE_TTL:-5m}
RETRIES=${RETRIES:-20}
SOURCES=${SOURCES:-2}
HOLD_TTL=${HOLD_TTL:-5s}
PAY_SHARE=${PAY_SHARE:-0.8}
CANCEL_SHARE=${CANCEL_SHARE:-0.05}
PAY_DELAY=${PAY_DELAY:-0.5s-3s}
# How long an admitted user who finds every free seat held waits for one to come back (swarm -held-wait).
HELD_WAIT=${HELD_WAIT:-30s}
# The waitlist (docs/protocol.md 5.4): WAITLIST=true keeps the sold-out line as a waitlist; the seats that come
# back are offered for OFFER_TTL to the waiting in order, who stay on it up to WAITLIST_WAIT (swarm
# -waitlist-wait). The run then reports how long a seat that came back took to be held again, and how many of
# them were sold.
WAITLIST=${WAITLIST:-false}
OFFER_TTL=${OFFER_TTL:-10m}
WAITLIST_WAIT=${WAITLIST_WAIT:-120s}
WEBHOOKS_EXPECTED=${WEBHOOKS_EXPECTED:-false}
# How long the swarm waits after its last user for the last holds to lapse and, with WEBHOOKS_EXPECTED=true,
# for every message of the outbox to arrive (swarm -settle).
SETTLE=${SETTLE:-30s}
SWARM_TIMEOUT=${SWARM_TIMEOUT:-300s}
REDIS_PORT=${REDIS_PORT:-16399}
PORT=${PORT:-18310}
OPS_PORT=${OPS_PORT:-18311} # the ops listener (http.ops_addr): /metrics, /debug/pprof
WEBHOOK_PORT=${WEBHOOK_PORT:-18312}
OUT=${OUT:-${TMPDIR:-/tmp}/wrbench-boxoffice}
DB=swarm_hold
DB_URL="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
SCREENING=boxoffice
SEATS=$((ROWS * SEATS_PER_ROW))
rand() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
ADMIN_KEY=boxoffice-admin-$(rand 12)
CONFIRM_KEY=boxoffice-confirm-$(rand 12)
PASS_SECRET=boxoffice-pass-$(rand 24)
WEBHOOK_SECRET=whsec_$(head -c 32 /dev/urandom | base64 -w0)
BASE="http://127.0.0.1:$PORT"
OPS="http://127.0.0.1:$OPS_PORT"
mkdir -p "$OUT"
WORK=$(mktemp -d)
server_pid=""
monitor_pid=""
cleanup() {
  [ -z "$monitor_pid" ] || kill "$monitor_pid" 2>/dev/null || true
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 200); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export PGOPTIONS='--client-min-messages=warning'
psql_admin() { psql -h 127.0.0.1 -U postgres -qAtX -v ON_ERROR_STOP=1 "$@"; }
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }

go build -o "$WORK/" ./cmd/waitroom ./cmd/swarm
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$WORK" --logfile "$WORK/redis.log" --maxclients 10000
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$REDIS_PORT" ping >/dev/null
psql_admin -c "DROP DATABASE IF EXISTS $DB" postgres
psql_admin -c "CREATE DATABASE $DB" postgres

{
  echo "box office, hold checkout: $USERS users, $CONCURRENCY connected at once, 1 seat each, $SEATS seats ($ROWS × $SEATS_PER_ROW);"
  echo "admission: interval $INTERVAL, batch_size $BATCH, max_active $MAX_ACTIVE, active_ttl $ACTIVE_TTL; hold_ttl $HOLD_TTL; pay share $PAY_SHARE after $PAY_DELAY, refund share $CANCEL_SHARE; swarm -retries $RETRIES -sources $SOURCES -held-wait $HELD_WAIT;"
  echo "waitlist $WAITLIST (offer_ttl $OFFER_TTL, swarm -waitlist-wait $WAITLIST_WAIT);"
  echo "load at start $(cut -d' ' -f1-3 /proc/loadavg); Redis $(redis-server --version | awk '{print $3}' | cut -d= -f2) on :$REDIS_PORT, $(psql_admin -c 'SHOW server_version' postgres | sed 's/^/PostgreSQL /; s/ (.*//'); $(nproc) cores: $(lscpu | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2}')"
} | tee "$OUT/setup.txt"

WAITROOM_HTTP_ADDR=127.0.0.1:$PORT WAITROOM_HTTP_OPS_ADDR=127.0.0.1:$OPS_PORT WAITROOM_REDIS_ADDR=127.0.0.1:$REDIS_PORT \
WAITROOM_DATABASE_URL="$DB_URL" WAITROOM_PASS_SECRET="$PASS_SECRET" WAITROOM_ADMIN_KEY="$ADMIN_KEY" \
WAITROOM_DEMO_ENABLED=false WAITROOM_LOG_LEVEL=warn \
WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=0 WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0 \
WAITROOM_BOOKING_CHECKOUT=hold WAITROOM_BOOKING_HOLD_TTL="$HOLD_TTL" WAITROOM_BOOKING_CONFIRM_KEY="$CONFIRM_KEY" \
WAITROOM_BOOKING_CHECKOUT_URL='https://shop.example/pay?order={code}' \
WAITROOM_BOOKING_WAITLIST="$WAITLIST" WAITROOM_BOOKING_OFFER_TTL="$OFFER_TTL" \
WAITROOM_WEBHOOKS_URL="http://127.0.0.1:$WEBHOOK_PORT/webhooks" WAITROOM_WEBHOOKS_SECRET="$WEBHOOK_SECRET" \
  "$WORK/waitroom" -config "" >"$OUT/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done
curl -sf --max-time 5 "$BASE/healthz" >/dev/null || { echo "the server did not answer /healthz within 10 s: $(tail -c 2000 "$OUT/server.log")" >&2; exit 1; }

now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
starts=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
body=$(printf '{"id":"%s","name":"Box office","starts_at":"%s","sale_opens_at":"%s","rows":%d,"seats_per_row":%d,"admission":{"interval":"%s","batch_size":%d,"max_active":%d,"active_ttl":"%s"}}' \
  "$SCREENING" "$starts" "$now" "$ROWS" "$SEATS_PER_ROW" "$INTERVAL" "$BATCH" "$MAX_ACTIVE" "$ACTIVE_TTL")
status=$(curl -sS --max-time 10 -o "$WORK/create.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_KEY" \
  -H 'Content-Type: application/json' "$BASE/api/admin/screenings" -d "$body")
[ "$status" = 201 ] || { echo "creating the screening answered $status: $(cat "$WORK/create.json")" >&2; exit 1; }
# The screening has no checkout of its own: it sells in the server's (hold). A 201 that is not a hold is a
# protocol error of the swarm.

# A line every 2 s of the screening as the server sees it (seats, waiting, active), and of the admission
# slots in Redis by what keeps them (a hold lasts HOLD_TTL; an admission active_ttl): a stall shows there.
monitor() {
  while sleep 2; do
    local now_ms active
    now_ms=$(($(date +%s%N) / 1000000))
    active=$(redis-cli -p "$REDIS_PORT" --scan --pattern "*{$SCREENING}:active" | head -1)
    printf '%s %s slots: %s ending within 60 s, %s later; allheld=%s\n' "$(date +%T)" \
      "$(curl -s --max-time 2 "$BASE/api/screenings/$SCREENING" | jq -c '{state, seats_available, seats_held, seats_sold, waiting, active}')" \
      "$(redis-cli -p "$REDIS_PORT" zcount "$active" -inf $((now_ms + 60000)))" "$(redis-cli -p "$REDIS_PORT" zcount "$active" "($((now_ms + 60000))" +inf)" \
      "$(redis-cli -p "$REDIS_PORT" exists "${active%active}allheld")"
  done
}
monitor >"$OUT/timeline.txt" 2>&1 &
monitor_pid=$!

expected=()
[ "$WEBHOOKS_EXPECTED" = true ] && expected=(-webhooks-expected)
[ "$WAITLIST" = true ] && expected+=(-waitlist-wait "$WAITLIST_WAIT")
swarm_rc=0
s0=$(proc_cpu "$server_pid")
t0=$(date +%s.%N)
"$WORK/swarm" -url "$BASE" -screening "$SCREENING" -users "$USERS" -concurrency "$CONCURRENCY" -seats 1 -retries "$RETRIES" \
  -sources "$SOURCES" -timeout "$SWARM_TIMEOUT" -checkout hold -pay-share "$PAY_SHARE" -cancel-share "$CANCEL_SHARE" \
  -pay-delay "$PAY_DELAY" -held-wait "$HELD_WAIT" -settle "$SETTLE" -confirm-key "$CONFIRM_KEY" -admin-key "$ADMIN_KEY" -database "$DB_URL" \
  -webhook-listen "127.0.0.1:$WEBHOOK_PORT" -webhook-secret "$WEBHOOK_SECRET" "${expected[@]}" ${SWARM_ARGS:-} \
  -json "$OUT/swarm.json" >"$OUT/swarm.txt" 2>"$OUT/swarm.err" || swarm_rc=$?
t1=$(date +%s.%N)
kill "$monitor_pid" 2>/dev/null || true
s1=$(proc_cpu "$server_pid")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)
curl -s --max-time 5 "$OPS/metrics" >"$OUT/metrics.txt" || true
cat "$OUT/swarm.txt"

j="$OUT/swarm.json"
[ -s "$j" ] || { echo "the swarm wrote no report (exit $swarm_rc): $(tail -c 2000 "$OUT/swarm.err")" >&2; exit 1; }
read -r ticket refunded lapsed unpaid sold_out gave_up errors verified < <(jq -r '[.outcomes.ticket, (.outcomes.refunded // 0),
  (.outcomes.lapsed // 0), (.outcomes.unpaid // 0), .outcomes.sold_out, .outcomes.gave_up, .outcomes.error, .verification.ok] | @tsv' "$j")
problems=()
[ "$errors" -eq 0 ] || problems+=("$errors errors: $(jq -c '.errors | with_entries(.value |= .count)' "$j")")
[ "$verified" = true ] || problems+=("the swarm's verification failed: $(jq -c '.verification.problems[:3]' "$j")")
[ "$swarm_rc" -eq 0 ] || problems+=("the swarm exited $swarm_rc")
total=$((ticket + refunded + lapsed + unpaid + sold_out + gave_up))
[ "$total" -eq "$USERS" ] || problems+=("outcomes add up to $total, want $USERS")
if [ ${#problems[@]} -eq 0 ]; then verdict=OK; else verdict="FAILED: $(IFS=';'; echo "${problems[*]}")"; fi
echo "wall $(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.1f", a - b}') s; server CPU $(awk -v a="$s1" -v b="$s0" 'BEGIN {printf "%.1f", a - b}') s, peak RSS $((hwm / 1024)) MB; $verdict" | tee "$OUT/summary.txt"
if [ "$WAITLIST" = true ]; then
  # Every seat that came back (an order expired or cancelled), and the next order that held it: how long after,
  # and whether an order sold it in the end. From PostgreSQL, whatever the users saw.
  psql_admin -F ' ' -c "WITH back AS (
      SELECT rs.seat_id, o.ended_at AS at FROM reservations o JOIN reservation_seats rs ON rs.reservation_id = o.id
      WHERE o.screening_id = '$SCREENING' AND o.status IN ('expired', 'cancelled') AND o.ended_at IS NOT NULL),
    next AS (
      SELECT b.at, (SELECT min(o2.created_at) FROM reservations o2 JOIN reservation_seats r2 ON r2.reservation_id = o2.id
          WHERE r2.screening_id = '$SCREENING' AND r2.seat_id = b.seat_id AND o2.created_at > b.at) AS held_at,
        EXISTS (SELECT 1 FROM reservations o3 JOIN reservation_seats r3 ON r3.reservation_id = o3.id
          WHERE r3.screening_id = '$SCREENING' AND r3.seat_id = b.seat_id AND o3.created_at > b.at AND o3.status = 'confirmed') AS sold
      FROM back b)
    SELECT count(*), count(held_at), count(*) FILTER (WHERE sold),
      round(1000 * percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM held_at - at)))::bigint,
      round(1000 * percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM held_at - at)))::bigint,
      round(1000 * max(extract(epoch FROM held_at - at)))::bigint FROM next" "$DB" |
    awk '{printf "seats back %d: held again %d, sold %d (%.1f%%); back to the next hold p50 %d ms, p99 %d ms, max %d ms\n",
      $1, $2, $3, ($1 ? 100 * $3 / $1 : 0), $4, $5, $6}' | tee -a "$OUT/summary.txt"
  echo "waitlist: $(jq -r '"\(.box_office.waitlisted // 0) users stayed on it, \(.box_office.offered // 0) offered seats"' "$j")" | tee -a "$OUT/summary.txt"
fi
echo "report, server log and metrics: $OUT"
[ "$verdict" = OK ]
}
