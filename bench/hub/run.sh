#!/usr/bin/env bash
# The hub-scale benchmark (docs/benchmarks.md, "Live rank at scale"): SERVERS server processes sharing one
# Redis (started here, on its own port, so INFO commandstats counts only this run) and one PostgreSQL
# database (created here), USERS waiting sockets spread evenly over them by one `swarm -mode line` per
# server. Admission admits BATCH per tick, so the line stays long and every tick pushes a position to every
# waiting socket. Prints, per run: registration rate, server RSS per socket, Redis commands per tick, and
# the swarm's push latency (receipt − tick_at) p50/p99/max, and per tick (bench/hub/ticks.py).
#
#   bench/hub/run.sh [USERS] [SERVERS] [HOLD]     e.g. bench/hub/run.sh 19000 1 40s; bench/hub/run.sh 100000 6 60s
#
# NAIVE=true runs bench/hub/naive instead of waitroom: the same protocol served in memory by a goroutine-per-
# socket writer (the gorilla chat example's way), the reference to measure on the same machine the same day.
#
# SWARM_ENV="K=V ..." sets variables for the swarms only (SWARM_ARGS adds flags), e.g. SWARM_ENV=GOMAXPROCS=1.
#
# Stops by itself: the swarm's hold ends after HOLD, then every process started here is stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."
USERS=${1:-19000}
SERVERS=${2:-1}
HOLD=${3:-40s}
BATCH=${BATCH:-10}
INTERVAL=${INTERVAL:-1s}
SOURCES=${SOURCES:-2}
REDIS_PORT=${REDIS_PORT:-16399}
BASE_PORT=${BASE_PORT:-18100}
OPS_BASE_PORT=${OPS_BASE_PORT:-18200} # each server's ops listener (http.ops_addr): /metrics, /debug/pprof
DB=wrbench_hub
OUT=${OUT:-bench/hub/out}
mkdir -p "$OUT"
WORK=$(mktemp -d)
pids=()
swarm_pids=()
cleanup() {
  for p in "${pids[@]}" "${swarm_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
  cp "$WORK"/server*.log "$WORK"/swarm*.err "$OUT"/ 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "run.sh: line $LINENO failed: stopping the run" >&2' ERR

go build -o "$WORK/" ./cmd/waitroom ./cmd/swarm ./bench/hub/naive
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --dir "$WORK" --logfile "$WORK/redis.log" --maxclients 10000
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE IF EXISTS $DB" postgres
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $DB" postgres

urls=()
ops=() # where each server's /metrics and /debug/pprof are: its ops listener (the naive server's own port)
for i in $(seq 0 $((SERVERS - 1))); do
  port=$((BASE_PORT + i))
  if [ "${NAIVE:-false}" = true ]; then
    "$WORK/naive" -addr "127.0.0.1:$port" -interval "$INTERVAL" -batch "$BATCH" >"$WORK/server$i.log" 2>&1 &
  else
  WAITROOM_HTTP_ADDR=127.0.0.1:$port WAITROOM_HTTP_OPS_ADDR=127.0.0.1:$((OPS_BASE_PORT + i)) WAITROOM_REDIS_ADDR=127.0.0.1:$REDIS_PORT WAITROOM_REDIS_PREFIX=bench: \
  WAITROOM_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$DB?sslmode=disable" \
  WAITROOM_PASS_SECRET=bench-secret-0123456789abcdef0123456789 WAITROOM_LOG_LEVEL=${SERVER_LOG_LEVEL:-warn} \
  WAITROOM_ADMISSION_INTERVAL=$INTERVAL WAITROOM_ADMISSION_BATCH_SIZE=$BATCH WAITROOM_ADMISSION_MAX_ACTIVE=1000000 \
  WAITROOM_ADMISSION_ACTIVE_TTL=30m WAITROOM_DEMO_ENABLED=true WAITROOM_BENCH_PPROF=$([ "${PPROF:-false}" = true ] || [ "${PPROF_BURST:-false}" = true ] || [ "${TRACE:-false}" = true ] && echo true || echo false) \
  WAITROOM_LIMITS_SOCKETS_PER_ADDRESS=0 WAITROOM_LIMITS_REGISTRATIONS_PER_SECOND=0 \
    GODEBUG=${SERVER_GODEBUG:-} "$WORK/waitroom" -config "" >"$WORK/server$i.log" 2>&1 &
  fi
  pids+=($!)
  urls+=("http://127.0.0.1:$port")
  if [ "${NAIVE:-false}" = true ]; then ops+=("http://127.0.0.1:$port"); else ops+=("http://127.0.0.1:$((OPS_BASE_PORT + i))"); fi
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
done
sleep 1
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
idle=()
for i in $(seq 0 $((SERVERS - 1))); do idle+=("$(rss "${pids[$i]}")"); done

per=$((USERS / SERVERS))
for i in $(seq 0 $((SERVERS - 1))); do
  env ${SWARM_ENV:-} "$WORK/swarm" -url "${urls[$i]}" -rate $(( ${RATE:-0} / SERVERS )) -mode line -duration "$HOLD" -users "$per" -sources "$SOURCES" ${SWARM_ARGS:-} \
    -json "$OUT/swarm-$USERS-$SERVERS-$i.json" >"$OUT/swarm-$USERS-$SERVERS-$i.txt" 2>"$WORK/swarm$i.err" &
  swarm_pids+=($!)
done

# CPU seconds (user + system, in clock ticks) of a process, and of every swarm process.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }   # the whole machine: user, nice, system, irq, softirq
# Every process's CPU (pid, command, ticks), to name what else ran in the window.
allcpu() { for f in /proc/[0-9]*/stat; do awk '{sub(/^\(/, "", $2); sub(/\)$/, "", $2); print $1, $2, $14 + $15}' "$f" 2>/dev/null || true; done; }   # a process may end between the glob and the read
swarm_ticks() { local t=0; for p in $(pgrep -x swarm); do t=$((t + $(ticks "$p"))); done; echo "$t"; }
# PostgreSQL's CPU: every postgres process's, the backends of this run's pools among them (the admission
# log's writer appends there during the burst); a backend that ends meanwhile takes its ticks with it.
pg_ticks() { local t=0; for p in $(pgrep -x postgres); do t=$((t + $(ticks "$p"))); done; echo "$t"; }
redis_pid=$(redis-cli -p "$REDIS_PORT" info server | tr -d '\r' | awk -F: '/^process_id:/ {print $2}')
cpu0_server=$(ticks "${pids[0]}"); cpu0_redis=$(ticks "$redis_pid"); cpu0_pg=$(pg_ticks); hz=$(getconf CLK_TCK)

# TRACE=true: a Go execution trace of the first server over 2 s of the held line (two ticks).
# PPROF_BURST=true: a CPU profile of the first server over the registration burst (the first 5 s), and its
# allocations from its start to the end of the burst (allocs-burst: the idle server before it allocated
# next to nothing). RATE=5000 paces the arrivals (users per second over all the swarms).
if [ "${PPROF_BURST:-false}" = true ]; then
  curl -s "${ops[0]}/debug/pprof/profile?seconds=5" -o "$OUT/cpu-burst-$USERS-$SERVERS.pprof" &
fi

# Wait until every socket is in line, then measure over a window of whole ticks.
for _ in $(seq 600); do
  n=0
  for u in "${ops[@]}"; do
    s=$(curl -s --max-time 5 "$u/metrics" | awk '/^waitroom_hub_sockets / {print $2}' || true)
    n=$((n + ${s:-0}))
  done
  [ "$n" -ge $((per * SERVERS)) ] && break
  sleep 0.5
done
if [ "${PPROF_BURST:-false}" = true ]; then
  curl -s "${ops[0]}/debug/pprof/allocs" -o "$OUT/allocs-burst-$USERS-$SERVERS.pprof" || true
fi
burst_cpu="server $(( ($(ticks "${pids[0]}") - cpu0_server) * 1000 / hz )) ms, swarms $(( $(swarm_ticks) * 1000 / hz )) ms, redis $(( ($(ticks "$redis_pid") - cpu0_redis) * 1000 / hz )) ms, postgres $(( ($(pg_ticks) - cpu0_pg) * 1000 / hz )) ms"
sleep 3
stats() { redis-cli -p "$REDIS_PORT" info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ {sum += $3} END {print sum}'; }
epoch() { redis-cli -p "$REDIS_PORT" get "bench:{demo}:epoch"; }
c0=$(stats); e0=$(epoch)
allcpu >"$WORK/cpu0"; w0_busy=$(busy); w0_server=$(ticks "${pids[0]}"); w0_swarms=$(swarm_ticks); w0_redis=$(ticks "$redis_pid")
if [ "${PPROF:-false}" = true ]; then
  curl -s "${ops[0]}/debug/pprof/profile?seconds=10" -o "$OUT/cpu-$USERS-$SERVERS.pprof" || true
  curl -s "${ops[0]}/debug/pprof/heap" -o "$OUT/heap-$USERS-$SERVERS.pprof" || true
  echo "before a forced GC: RSS $(rss "${pids[0]}") KiB" >"$OUT/gc-$USERS-$SERVERS.txt"
  curl -s "${ops[0]}/debug/pprof/heap?gc=1" -o "$OUT/heapgc-$USERS-$SERVERS.pprof" || true
  sleep 1
  echo "after a forced GC: RSS $(rss "${pids[0]}") KiB" >>"$OUT/gc-$USERS-$SERVERS.txt"
  curl -s "${ops[0]}/metrics" | grep -E '^(go_goroutines|go_memstats_(heap_inuse|heap_alloc|stack_inuse)_bytes) ' >>"$OUT/gc-$USERS-$SERVERS.txt" || true
elif [ "${TRACE:-false}" = true ]; then
  sleep 4
  curl -s "${ops[0]}/debug/pprof/trace?seconds=2" -o "$OUT/trace-$USERS-$SERVERS.out" || true
  sleep 4
else
  sleep 10
fi
c1=$(stats); e1=$(epoch)
allcpu >"$WORK/cpu1"
others=$(join -j1 <(sort "$WORK/cpu0") <(sort "$WORK/cpu1") | awk -v hz="$hz" '$5 - $3 > 0 && $2 !~ /^(waitroom|swarm|naive|redis-server)$/ {d[$2] += $5 - $3} END {for (c in d) printf "%s %d ms, ", c, d[c] * 1000 / hz}')
window_cpu="machine $(( ($(busy) - w0_busy) * 1000 / hz )) ms, server $(( ($(ticks "${pids[0]}") - w0_server) * 1000 / hz )) ms, swarms $(( ($(swarm_ticks) - w0_swarms) * 1000 / hz )) ms, redis $(( ($(ticks "$redis_pid") - w0_redis) * 1000 / hz )) ms"
full=()
for i in $(seq 0 $((SERVERS - 1))); do
  full+=("$(rss "${pids[$i]}")")
  curl -s "${ops[$i]}/metrics" | grep -E '^(go_goroutines|go_memstats_(heap_inuse|heap_alloc|stack_inuse|sys|heap_idle|heap_released)_bytes|go_gc_gogc|waitroom_hub_sockets) ' >"$OUT/metrics-$USERS-$SERVERS-$i.txt" || true
done

# RSS over the rest of the hold: the registration burst's garbage is returned to the OS gradually.
# The last sample taken while every socket is still held is the settled RSS.
settled=("${full[@]}")
while kill -0 "${swarm_pids[0]}" 2>/dev/null; do
  line="$(date +%T)"
  for i in $(seq 0 $((SERVERS - 1))); do
    n=$(curl -s --max-time 2 "${ops[$i]}/metrics" | awk '/^waitroom_hub_sockets / {print $2}' || true)
    r=$(rss "${pids[$i]}")
    [ "${n:-0}" -ge $((per * 99 / 100)) ] && settled[$i]=$r
    line="$line $r"
  done
  echo "$line" >>"$OUT/rss-$USERS-$SERVERS.txt"
  sleep 5
done
for p in "${swarm_pids[@]}"; do wait "$p" || true; done
# Every socket has closed: each should have been counted off in Redis (docs/fairness.md), leaving no count.
counted=""
if [ "${NAIVE:-false}" != true ]; then
  for _ in $(seq 30); do
    counted=$(redis-cli -p "$REDIS_PORT" hlen "bench:{demo}:conns")
    [ "$counted" = 0 ] && break
    sleep 1
  done
fi

{
  echo "users=$USERS servers=$SERVERS hold=$HOLD batch=$BATCH interval=$INTERVAL sources=$SOURCES"
  echo "redis commands in a 10 s window of held line: $((c1 - c0)) over $((e1 - e0)) admission events: $(( (c1 - c0) / (e1 - e0 > 0 ? e1 - e0 : 1) )) per event (INFO commandstats, commands inside scripts included)"
  for i in $(seq 0 $((SERVERS - 1))); do
    echo "server $i: RSS idle ${idle[$i]} KiB, with its sockets ${full[$i]} KiB, per socket $(( (${full[$i]} - ${idle[$i]}) * 1024 / per )) B (10 s after the registrations); at the end of the hold ${settled[$i]} KiB, per socket $(( (${settled[$i]} - ${idle[$i]}) * 1024 / per )) B"
  done
  echo "CPU in the window over $((e1 - e0)) admission events: $window_cpu (first server; every swarm)"
  echo "other processes' CPU in the window: ${others:-none}"
  echo "CPU until every socket was in line (from the swarms' start): $burst_cpu (first server; the swarms: all of them, whole lives)"
  [ -n "$counted" ] && echo "after the hold: $counted tokens still counted as connected in Redis (want 0: every closed socket counted off)"
  bench/hub/ticks.py "$OUT"/swarm-"$USERS"-"$SERVERS"-*.json
} | tee "$OUT/summary-$USERS-$SERVERS.txt"
