#!/usr/bin/env bash
# The seed-1 replay (docs/benchmarks.md, "Seed-1 replay"): the seed project's k6 load test, our way. USERS
# virtual users (30,000), CONCURRENCY of them connected at once (5,000), one seat each, on a screening of
# 1,000 seats created through the admin API with the seed's admission settings (a tick every 1 s admitting
# up to 300, at most 1,000 admitted at once), against one server process on its own Redis (started here, on
# its own port) and its own PostgreSQL database (dropped and created here, before every run).
#
#   bench/replay/run.sh [RUNS]          e.g. bench/replay/run.sh 3; or make bench-replay
#
# Before each run it waits, at most LOAD_WAIT seconds, polling every 15 s, until the 1-minute load average
# is below LOAD_MAX and at most BUSY_MAX of the CPU was busy over 5 s, and records the load average it
# started at. It reports the CPU seconds the server, the swarm, Redis, PostgreSQL and anything else used
# during the run, so a run that something else disturbed shows it. After each run it checks: TICKETS (the seat
# count) tickets, every user ended with a ticket or sold_out, no error, the swarm's own verification, and in
# PostgreSQL exactly TICKETS seats sold and none twice. It prints one line per run and exits non-zero if any
# check of any run failed. Wall time is measured and reported (target: within 60 s), not asserted.
#
# Settings (environment): USERS CONCURRENCY ROWS SEATS_PER_ROW INTERVAL BATCH MAX_ACTIVE ACTIVE_TTL
# RETRIES OPENS_IN SOURCES REDIS_PORT PORT LOAD_MAX BUSY_MAX LOAD_WAIT OUT, PPROF=true to keep a CPU
# profile of the server over each run (bench.pprof) in OUT, SWARM_ARGS for more flags of the swarm
# (SWARM_ARGS=-best: each user asks for the best seat, {"count": 1}, instead of naming one), and NAIVE.
#
# NAIVE=true runs bench/hub/naive instead of waitroom, on the same port, with the same screening created
# the same way: the same protocol served in memory under one mutex, with no Redis and no PostgreSQL (neither
# is started), the floor to set our figures against, measured on the same machine the same day. The
# PostgreSQL checks and the pool figures do not apply (the line says n/a); the swarm's verification, the
# ticket, sold_out and error checks and the naive server's own count of seats sold do, and the sale's end is
# the naive server's last sale (its /metrics).
#
# Stops by itself: every wait is bounded, the swarm's run by its -timeout, and every process started here
# is stopped on exit.

# The body is one compound command, which bash reads whole before running it: an edit of this file during
# a run (a run takes minutes when it waits for a quiet machine) cannot change or break the run.
{
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-3}
USERS=${USERS:-30000}
CONCURRENCY=${CONCURRENCY:-5000}
ROWS=${ROWS:-40}
SEATS_PER_ROW=${SEATS_PER_ROW:-25}
INTERVAL=${INTERVAL:-1s}
BATCH=${BATCH:-300}
MAX_ACTIVE=${MAX_ACTIVE:-1000}
ACTIVE_TTL=${ACTIVE_TTL:-5m}
SOURCES=${SOURCES:-2}
# A user whose seat was taken between its seat-map read and its request tries another, as a person would,
# until it has one or the map shows none left (sold_out); the swarm's default 3 leaves a few "gave_up".
RETRIES=${RETRIES:-20}
# The sale opens this many seconds after the screening is created (0: at once). More than 0 puts the first
# CONCURRENCY users in the pre-queue, which is shuffled into the line at the opening.
OPENS_IN=${OPENS_IN:-0}
SWARM_TIMEOUT=${SWARM_TIMEOUT:-180s}
REDIS_PORT=${REDIS_PORT:-16398}
PORT=${PORT:-18300}
OPS_PORT=${OPS_PORT:-18301} # the ops listener (http.ops_addr): /metrics, /debug/pprof
LOAD_MAX=${LOAD_MAX:-1.5}
LOAD_WAIT=${LOAD_WAIT:-600}
BUSY_MAX=${BUSY_MAX:-0.3}
PPROF=${PPROF:-false}
NAIVE=${NAIVE:-false}
OUT=${OUT:-${TMPDIR:-/tmp}/wrbench-replay}
DB=wrbench_replay
DB_URL="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable"
SCREENING=replay
TICKETS=$((ROWS * SEATS_PER_ROW))
ADMIN_KEY=replay-admin-key-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
PASS_SECRET=replay-pass-secret-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
BASE="http://127.0.0.1:$PORT"
OPS="http://127.0.0.1:$OPS_PORT"
[ "$NAIVE" = true ] && OPS=$BASE # the naive server has /metrics and /debug/pprof on its one port
mkdir -p "$OUT"
WORK=$(mktemp -d)
server_pid=""
bg_pids=()
cleanup() {
  for p in "${bg_pids[@]}" $server_pid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "$NAIVE" = true ] || redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export PGOPTIONS='--client-min-messages=warning'
psql_admin() { psql -h 127.0.0.1 -U postgres -qAtX -v ON_ERROR_STOP=1 "$@"; }
psql_db() { psql -h 127.0.0.1 -U postgres -qAtX -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
# CPU seconds: the whole machine's busy time, one process's, this shell's reaped children's, Redis's own.
machine_busy() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {printf "%.2f", ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat; }
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# `times` in this shell, not in a subshell (a subshell starts with no reaped children of its own).
children_cpu() { awk 'NR == 2 {for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); t += a[1] * 60 + a[2]}; printf "%.2f", t}' "$1"; }
redis_cpu() { [ "$NAIVE" = true ] && { echo 0; return; }; redis-cli -p "$REDIS_PORT" info cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user):/ {t += $2} END {printf "%.2f", t}'; }
# The CPU seconds of the PostgreSQL backends serving DB: those alive at the first call are measured from
# then (pg_cpu FILE writes "pid seconds" lines; pg_cpu FILE BASE sums the growth since BASE).
pg_cpu() {
  local pids=""
  [ "$NAIVE" = true ] || pids=$(psql_admin -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB'" postgres)
  for pid in $pids; do echo "$pid $(proc_cpu "$pid")"; done >"$1"
  [ -n "${2:-}" ] && awk 'NR == FNR {base[$1] = $2; next} {t += $2 - base[$1]} END {printf "%.2f", t}' "$2" "$1"
  return 0
}
# busy_share is the share of the machine's CPU busy over the next 5 s (the load average lags by a minute).
busy_share() {
  local m0 m1
  m0=$(machine_busy); sleep 5; m1=$(machine_busy)
  awk -v a="$m0" -v b="$m1" -v n="$(nproc)" 'BEGIN {printf "%.2f", (b - a) / (5 * n)}'
}
# screening_metric NAME FILE: the value of NAME{screening="SCREENING"} in a /metrics text, 0 if absent.
screening_metric() { awk -v m="$1{screening=\"$SCREENING\"}" '$1 == m {v = $2} END {printf "%d", v}' "$2"; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a - b}'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill "$server_pid" 2>/dev/null || true
  # Graceful shutdown is bounded by the server; give it 20 s, then stop it hard.
  for _ in $(seq 200); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

go build -o "$WORK/" ./cmd/waitroom ./cmd/swarm ./bench/hub/naive
if [ "$NAIVE" != true ]; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --dir "$WORK" --logfile "$WORK/redis.log" --maxclients 10000
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$REDIS_PORT" ping >/dev/null
fi
cores="$(nproc) cores: $(lscpu | awk -F: '/^Model name/ {gsub(/^ +/, "", $2); print $2}')"

{
  echo "seed-1 replay: $USERS users, $CONCURRENCY connected at once, 1 seat each, $TICKETS seats ($ROWS × $SEATS_PER_ROW);"
  echo "admission: interval $INTERVAL, batch_size $BATCH, max_active $MAX_ACTIVE, active_ttl $ACTIVE_TTL; sale opens ${OPENS_IN}s after creation; one server process; swarm -retries $RETRIES -sources $SOURCES;"
  if [ "$NAIVE" = true ]; then
    echo "NAIVE: the naive server (bench/hub/naive: in memory, one mutex, no Redis, no PostgreSQL); $cores"
  else
    echo "Redis $(redis-server --version | awk '{print $3}' | cut -d= -f2) on :$REDIS_PORT, $(psql_admin -c 'SHOW server_version' postgres | sed 's/^/PostgreSQL /; s/ (.*//'); $cores"
  fi
} | tee "$OUT/setup.txt"

failed=0
summaries=()
for run in $(seq 1 "$RUNS"); do
  # Wait for a quiet machine: the 2 cores are shared with other work.
  # Quiet: the 1-minute load average below LOAD_MAX, and at most BUSY_MAX of the CPU busy over 5 s.
  waited=0
  while :; do
    busy=$(busy_share)
    below "$(load1)" "$LOAD_MAX" && below "$busy" "$BUSY_MAX" && break
    [ "$waited" -lt "$LOAD_WAIT" ] || break
    echo "run $run: load average $(load1) (want < $LOAD_MAX), CPU busy ${busy} over 5 s (want < $BUSY_MAX); waiting (${waited}s of at most ${LOAD_WAIT}s)" >&2
    sleep 10
    waited=$((waited + 15))
  done
  load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
  quiet=yes
  below "$(load1)" "$LOAD_MAX" && below "$busy" "$BUSY_MAX" || quiet="NO (gave up waiting after ${LOAD_WAIT}s)"

  if [ "$NAIVE" = true ]; then
    "$WORK/naive" -addr "127.0.0.1:$PORT" -admin-key "$ADMIN_KEY" >"$OUT/server-$run.log" 2>&1 &
  else
    redis-cli -p "$REDIS_PORT" flushall >/dev/null
    psql_admin -c "DROP DATABASE IF EXISTS $DB" postgres
    psql_admin -c "CREATE DATABASE $DB" postgres

    WAITROOM_HTTP_ADDR=127.0.0.1:$PORT WAITROOM_HTTP_OPS_ADDR=127.0.0.1:$OPS_PORT WAITROOM_REDIS_ADDR=127.0.0.1:$REDIS_PORT \
    WAITROOM_DATABASE_URL="$DB_URL" WAITROOM_PASS_SECRET="$PASS_SECRET" WAITROOM_ADMIN_KEY="$ADMIN_KEY" \
    WAITROOM_DEMO_ENABLED=false WAITROOM_LOG_LEVEL=warn WAITROOM_BENCH_PPROF="$PPROF" \
    WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=0 WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0 \
      "$WORK/waitroom" -config "" >"$OUT/server-$run.log" 2>&1 &
  fi
  server_pid=$!
  for _ in $(seq 100); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf --max-time 5 "$BASE/healthz" >/dev/null || { echo "run $run: the server did not answer /healthz within 10 s (see $OUT/server-$run.log)" >&2; exit 1; }

  now=$(date -u -d "+$OPENS_IN seconds" +%Y-%m-%dT%H:%M:%SZ)
  starts=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
  body=$(printf '{"id":"%s","name":"Seed-1 replay","starts_at":"%s","sale_opens_at":"%s","rows":%d,"seats_per_row":%d,"admission":{"interval":"%s","batch_size":%d,"max_active":%d,"active_ttl":"%s"}}' \
    "$SCREENING" "$starts" "$now" "$ROWS" "$SEATS_PER_ROW" "$INTERVAL" "$BATCH" "$MAX_ACTIVE" "$ACTIVE_TTL")
  status=$(curl -sS --max-time 10 -o "$WORK/create.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN_KEY" \
    -H 'Content-Type: application/json' "$BASE/api/admin/screenings" -d "$body")
  if [ "$status" != 201 ]; then
    echo "run $run: creating the screening answered $status: $(cat "$WORK/create.json")" >&2
    exit 1
  fi

  if [ "$PPROF" = true ]; then
    curl -s --max-time 60 "$OPS/debug/pprof/profile?seconds=${PPROF_SECONDS:-30}" -o "$OUT/cpu-$run.pprof" &
    bg_pids+=($!)
  fi
  swarm_rc=0
  pg_cpu "$WORK/pg0"
  m0=$(machine_busy); s0=$(proc_cpu "$server_pid"); times >"$WORK/times0"; w0=$(children_cpu "$WORK/times0"); r0=$(redis_cpu); t0=$(date +%s.%N)
  "$WORK/swarm" -url "$BASE" -screening "$SCREENING" -users "$USERS" -concurrency "$CONCURRENCY" -seats 1 -retries "$RETRIES" \
    -sources "$SOURCES" -timeout "$SWARM_TIMEOUT" -json "$OUT/swarm-$run.json" ${SWARM_ARGS:-} \
    >"$OUT/swarm-$run.txt" 2>"$WORK/swarm-$run.err" || swarm_rc=$?
  m1=$(machine_busy); s1=$(proc_cpu "$server_pid"); times >"$WORK/times1"; w1=$(children_cpu "$WORK/times1"); r1=$(redis_cpu); t1=$(date +%s.%N)
  pg=$(pg_cpu "$WORK/pg1" "$WORK/pg0")
  others=$(awk -v m="$(minus "$m1" "$m0")" -v a="$(minus "$s1" "$s0")" -v b="$(minus "$w1" "$w0")" -v c="$(minus "$r1" "$r0")" -v d="$pg" 'BEGIN {printf "%.1f", m - a - b - c - d}')
  stores="Redis $(minus "$r1" "$r0") s, PostgreSQL $(printf %.1f "$pg") s"
  [ "$NAIVE" = true ] && stores="Redis and PostgreSQL n/a (naive)"
  cpu="CPU over the swarm's run: server $(minus "$s1" "$s0") s, swarm $(minus "$w1" "$w0") s, $stores, anything else $others s; whole machine $(minus "$m1" "$m0") s busy of $(awk -v a="$t1" -v b="$t0" -v n="$(nproc)" 'BEGIN {printf "%.1f", (a - b) * n}') s"
  server_hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0)
  curl -s --max-time 5 "$OPS/metrics" >"$OUT/metrics-$run.txt" || true
  pool=$(awk '/^go_sql_wait_count_total/ {n = $2} /^go_sql_wait_duration_seconds_total/ {d = $2} END {printf "%d waits for a connection, %.0f s in all", n, d}' "$OUT/metrics-$run.txt")
  [ "$NAIVE" = true ] && pool="n/a (naive)"
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bg_pids=()
  stop_server

  if [ "$NAIVE" = true ]; then
    # No database: the naive server's own count, and its last sale, from its /metrics.
    naive_sold=$(screening_metric waitroom_naive_seats_sold "$OUT/metrics-$run.txt")
    last_sale_ms=$(screening_metric waitroom_naive_last_sale_ms "$OUT/metrics-$run.txt")
  else
    # The database has the last word.
    sql_seats=$(psql_db "SELECT count(*) FROM reservation_seats WHERE screening_id='$SCREENING'")
    sql_distinct=$(psql_db "SELECT count(DISTINCT seat_id) FROM reservation_seats WHERE screening_id='$SCREENING'")
    sql_twice=$(psql_db "SELECT seat_id FROM reservation_seats WHERE screening_id='$SCREENING' GROUP BY seat_id HAVING count(*)>1" | wc -l)
    sql_reservations=$(psql_db "SELECT count(*) FROM reservations WHERE screening_id='$SCREENING'")
    last_sale_ms=$(psql_db "SELECT coalesce((extract(epoch FROM max(created_at)) * 1000)::bigint, 0) FROM reservations WHERE screening_id='$SCREENING'")
  fi

  j="$OUT/swarm-$run.json"
  if [ ! -s "$j" ]; then
    echo "run $run: the swarm wrote no report (exit $swarm_rc): $(tail -c 2000 "$WORK/swarm-$run.err")" >&2
    failed=1
    summaries+=("run $run: FAILED: no swarm report")
    continue
  fi
  read -r ticket sold_out gave_up errors reconnects elapsed_ms reg_n reg_ps first_dial_ms c50 c99 r50 r99 rcount p50 p99 pmax pcount verified stopped first_tick_ms < <(jq -r '[
      .outcomes.ticket, .outcomes.sold_out, .outcomes.gave_up, .outcomes.error, .reconnects, .elapsed_ms,
      .registration.registered, .registration.per_second, .registration.first_dial_at_ms,
      .latency.connect.p50_ms, .latency.connect.p99_ms,
      .latency.reservation.p50_ms, .latency.reservation.p99_ms, .latency.reservation.count,
      .push.positions.p50_ms, .push.positions.p99_ms, .push.positions.max_ms, .push.positions.count,
      .verification.ok, (if .stopped then .stopped else "no" end),
      (if (.push.per_tick | length) > 0 then .push.per_tick[0].tick_at_ms - .registration.first_dial_at_ms else -1 end)] | @tsv' "$j")
  sellout_ms=$((last_sale_ms > 0 ? last_sale_ms - first_dial_ms : 0))
  tps=$(awk -v n="$ticket" -v ms="$sellout_ms" 'BEGIN { printf "%.0f", (ms > 0 ? n * 1000 / ms : 0) }')
  wall=$(awk -v ms="$elapsed_ms" 'BEGIN { printf "%.1f", ms / 1000 }')

  problems=()
  [ "$ticket" -eq "$TICKETS" ] || problems+=("tickets $ticket, want $TICKETS")
  [ $((ticket + sold_out)) -eq "$USERS" ] || problems+=("ticket + sold_out = $((ticket + sold_out)), want every one of $USERS (gave_up $gave_up, error $errors)")
  [ "$errors" -eq 0 ] || problems+=("$errors errors: $(jq -c '.errors | with_entries(.value |= .count)' "$j")")
  [ "$verified" = true ] || problems+=("the swarm's verification failed: $(jq -c '.verification.problems[:3]' "$j")")
  [ "$stopped" = no ] || problems+=("the swarm stopped early ($stopped)")
  [ "$swarm_rc" -eq 0 ] || problems+=("the swarm exited $swarm_rc")
  if [ "$NAIVE" = true ]; then
    [ "$naive_sold" -eq "$TICKETS" ] || problems+=("the naive server sold $naive_sold seats, want $TICKETS")
    sql="SQL checks: n/a (naive); the naive server sold $naive_sold seats"
  else
    [ "$sql_seats" -eq "$TICKETS" ] || problems+=("reservation_seats has $sql_seats rows, want $TICKETS")
    [ "$sql_twice" -eq 0 ] || problems+=("$sql_twice seats sold twice in reservation_seats")
    [ "$sql_distinct" -eq "$TICKETS" ] || problems+=("$sql_distinct distinct seats sold, want $TICKETS")
    [ "$sql_reservations" -eq "$ticket" ] || problems+=("$sql_reservations reservations in the database, $ticket tickets in the swarm")
    sql="SQL $sql_seats seats, $sql_distinct distinct, $sql_twice twice"
  fi
  target="met"
  [ "$elapsed_ms" -le 60000 ] || target="MISSED"

  if [ ${#problems[@]} -eq 0 ]; then verdict=OK; else verdict="FAILED: $(IFS=';'; echo "${problems[*]}")"; failed=1; fi
  line="run $run: load $load_at_start at start, CPU busy $busy over the 5 s before (quiet: $quiet); $USERS users in ${wall}s wall (≤ 60 s: $target); ticket $ticket, sold_out $sold_out, gave_up $gave_up, error $errors, reconnects $reconnects; first tick pushed ${first_tick_ms} ms and sold out ${sellout_ms} ms after the first dial (${tps} tickets/s); registration ${reg_ps}/s ($reg_n; connect p50/p99 ${c50}/${c99} ms); reservation p50/p99 ${r50}/${r99} ms ($rcount); push p50/p99/max ${p50}/${p99}/${pmax} ms ($pcount); $sql; server peak RSS $((server_hwm / 1024)) MB; SQL pool: $pool; $cpu; $verdict"
  echo "$line" | tee "$OUT/summary-$run.txt"
  summaries+=("$line")
done

echo
printf '%s\n' "${summaries[@]}" | tee "$OUT/summary.txt"
echo "reports, server logs and metrics: $OUT"
exit "$failed"
}
