#!/usr/bin/env bash
# redis-cluster.sh start|stop DIR [BASE_PORT]
#
# start: runs a throw-away Redis Cluster of 3 masters, no replicas, on 127.0.0.1 ports BASE_PORT..BASE_PORT+2
# (cluster bus on port+10000), with no persistence; config files, pidfiles and logs go in DIR. Prints the
# comma-separated address list (for WAITROOM_REDIS_ADDR) on stdout once every node says cluster_state:ok;
# everything else goes to stderr. On any failure it stops what it started and exits non-zero.
# stop: shuts down the nodes started in DIR (SHUTDOWN NOSAVE, then the pidfile's process). Safe to repeat.
#
# Every wait is bounded: a node that does not answer in 10 s, a cluster create that takes more than 30 s, or a
# cluster that is not ok within 30 s is a failure.
set -euo pipefail

readonly NODES=3
readonly DEFAULT_BASE_PORT=17000

usage() {
  echo "usage: $0 start|stop DIR [BASE_PORT]" >&2
  exit 2
}

log() { echo "redis-cluster: $*" >&2; }

cli() { timeout 5 redis-cli -h 127.0.0.1 -p "$1" "${@:2}" </dev/null; }

# port_busy: something accepts connections on 127.0.0.1:$1.
port_busy() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# pid_is_redis: $1 is a live redis-server process (a pidfile's pid may have been reused).
pid_is_redis() {
  [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q redis-server
}

# ours: the node answering on port $1 keeps its files in $2 (so it is one of ours, not a stranger's).
ours() { [[ "$(cli "$1" config get dir 2>/dev/null | tr -d '\r' | sed -n 2p)" == "$2" ]]; }

stop() {
  local dir=$1 port pid pidfile
  [[ -f "$dir/ports" ]] || return 0
  for port in $(cat "$dir/ports"); do
    pidfile="$dir/redis-$port.pid"
    pid=""
    [[ -f "$pidfile" ]] && pid=$(cat "$pidfile")
    if ours "$port" "$dir"; then
      cli "$port" shutdown nosave >/dev/null 2>&1 || true
    fi
    if [[ -n "$pid" ]]; then
      for _ in $(seq 1 50); do
        pid_is_redis "$pid" || break
        sleep 0.1
      done
      if pid_is_redis "$pid"; then
        log "node $port (pid $pid) ignored SHUTDOWN; killing it"
        kill -TERM "$pid" 2>/dev/null || true
        sleep 1
        pid_is_redis "$pid" && kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
    rm -f "$pidfile"
  done
  rm -f "$dir/ports"
}

# fail: say why, show the nodes' logs, stop everything started, exit.
fail() {
  log "$*"
  local f
  for f in "$DIR"/redis-*.log; do
    [[ -f "$f" ]] || continue
    log "--- last lines of $f"
    tail -n 15 "$f" >&2 || true
  done
  stop "$DIR"
  exit 1
}

start() {
  local port i pid addrs=() ports=()
  for ((i = 0; i < NODES; i++)); do
    ports+=($((BASE_PORT + i)))
  done
  if [[ -f "$DIR/ports" ]]; then
    log "$DIR already holds a cluster (ports $(cat "$DIR/ports")); stop it first"
    exit 1
  fi
  for port in "${ports[@]}"; do
    port_busy "$port" && { log "port $port is in use"; exit 1; }
    port_busy $((port + 10000)) && { log "cluster bus port $((port + 10000)) is in use"; exit 1; }
  done

  echo "${ports[*]}" >"$DIR/ports"
  trap 'fail "interrupted"' INT TERM
  for port in "${ports[@]}"; do
    redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
      --cluster-enabled yes --cluster-config-file "$DIR/nodes-$port.conf" --cluster-node-timeout 5000 \
      --save "" --appendonly no --dir "$DIR" \
      --daemonize yes --pidfile "$DIR/redis-$port.pid" --logfile "$DIR/redis-$port.log" </dev/null >&2 \
      || fail "redis-server on port $port did not start"
  done

  # Each node answers, and it is the process we started (not another one that took the port meanwhile).
  for port in "${ports[@]}"; do
    local ok=""
    for _ in $(seq 1 100); do
      pid=$(cat "$DIR/redis-$port.pid" 2>/dev/null || true)
      if [[ -n "$pid" ]] && [[ "$(cli "$port" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')" == "$pid" ]]; then
        ok=1
        break
      fi
      sleep 0.1
    done
    [[ -n "$ok" ]] || fail "node $port did not answer within 10s"
    addrs+=("127.0.0.1:$port")
  done

  timeout 30 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes </dev/null >&2 \
    || fail "redis-cli --cluster create failed or took more than 30s"

  for port in "${ports[@]}"; do
    local ok=""
    for _ in $(seq 1 300); do
      if cli "$port" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'; then
        ok=1
        break
      fi
      sleep 0.1
    done
    [[ -n "$ok" ]] || fail "node $port: cluster_state not ok within 30s"
  done
  trap - INT TERM
  (IFS=,; echo "${addrs[*]}")
}

[[ $# -ge 2 && $# -le 3 ]] || usage
CMD=$1
DIR=$2
BASE_PORT=${3:-$DEFAULT_BASE_PORT}
[[ "$BASE_PORT" =~ ^[0-9]+$ ]] && ((BASE_PORT >= 1024 && BASE_PORT + NODES - 1 + 10000 <= 65535)) \
  || { log "BASE_PORT must be a number from 1024 to $((65535 - 10000 - NODES + 1))"; exit 2; }

case "$CMD" in
start)
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  start
  ;;
stop)
  [[ -d "$DIR" ]] || exit 0
  DIR=$(cd "$DIR" && pwd)
  stop "$DIR"
  ;;
*) usage ;;
esac
