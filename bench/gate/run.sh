#!/bin/sh
# bench/gate/run.sh: the gate's overhead on an admitted request for a static page. nginx serves the page
# (the origin); the same page is fetched with wrk from the origin alone, through a plain Go reverse proxy
# (bench/gate/plainproxy: the proxy hop with no decision), and through the gate with a live admission's
# cookie, alternated RUNS times. Everything runs on this machine: quote the ratios of one run.
#
#   bench/gate/run.sh            # RUNS=3 DURATION=10s CONNS=50
set -eu
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-50}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$(mktemp -d)
cleanup() {
	for p in "$DIR"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; done
	rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

chmod 755 "$DIR" # nginx's worker runs as another user
mkdir -p "$DIR/www/checkout" "$DIR/data"
{
	printf '<!doctype html><html lang=en><title>Checkout</title><h1>Checkout</h1><p>'
	i=0; while [ $i -lt 30 ]; do printf 'Static page of the origin. '; i=$((i + 1)); done
	printf '</p></html>\n'
} >"$DIR/www/checkout/index.html"
cat >"$DIR/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $DIR/nginx.pid;
error_log $DIR/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $DIR/body; proxy_temp_path $DIR/proxy; fastcgi_temp_path $DIR/fcgi;
  uwsgi_temp_path $DIR/uwsgi; scgi_temp_path $DIR/scgi;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:18090; root $DIR/www; }
}
CONF
nginx -c "$DIR/nginx.conf" &
(cd "$ROOT" && go build -o "$DIR/waitroom" ./cmd/waitroom && go build -o "$DIR/plainproxy" ./bench/gate/plainproxy)
"$DIR/plainproxy" -addr 127.0.0.1:18082 -upstream http://127.0.0.1:18090 2>"$DIR/plainproxy.log" &
echo $! >"$DIR/plainproxy.pid"
WAITROOM_HTTP_ADDR=127.0.0.1:18080 WAITROOM_GATE_ADDR=127.0.0.1:18081 WAITROOM_GATE_UPSTREAM=http://127.0.0.1:18090 \
	WAITROOM_GATE_PATHS=/checkout=demo WAITROOM_DATA_DIR="$DIR/data" WAITROOM_ADMISSION_ACTIVE_TTL=30m \
	WAITROOM_HTTP_OPS_ADDR=127.0.0.1:18083 WAITROOM_LOG_LEVEL=warn "$DIR/waitroom" -config "" >"$DIR/waitroom.log" 2>&1 &
echo $! >"$DIR/waitroom.pid"
i=0
until curl -sf -o /dev/null http://127.0.0.1:18080/healthz; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "the server did not start" >&2; cat "$DIR/waitroom.log" >&2; exit 1; }
	sleep 0.1
done
# A live admission: the room (demo, max_active 100) has space, so the first visit is admitted directly.
COOKIE=$(curl -si http://127.0.0.1:18081/checkout/index.html | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p')
[ -n "$COOKIE" ] || { echo "no admission cookie from the gate" >&2; exit 1; }

measure() { # name url [cookie]
	if [ $# -eq 3 ]; then out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency -H "Cookie: $3" "$2"); else out=$(wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$2"); fi
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1 == "50%" {print $2}')
	p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
	bad=$(echo "$out" | awk '/Non-2xx/ {print $5}')
	printf '%-7s %-8s %10s req/s  p50 %8s  p99 %8s  non-2xx %s\n' "$run" "$1" "$rps" "$p50" "$p99" "${bad:-0}"
}
run=1
while [ $run -le "$RUNS" ]; do
	measure origin http://127.0.0.1:18090/checkout/index.html
	measure proxy http://127.0.0.1:18082/checkout/index.html
	measure gate http://127.0.0.1:18081/checkout/index.html "$COOKIE"
	run=$((run + 1))
done
