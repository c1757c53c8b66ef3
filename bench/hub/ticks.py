#!/usr/bin/env python3
"""Summarises the per-tick push latency of swarm JSON reports (bench/hub/run.sh): for the ticks that reached
every waiting socket (count at least 95% of the largest), the median, p90 and max of the per-tick p99, and the
median per-tick p50. The registration burst's ticks reach fewer sockets and are left out.

    bench/hub/ticks.py bench/hub/out/swarm-19000-1-0.json [more.json ...]
"""
import json
import statistics
import sys

for path in sys.argv[1:]:
    ticks = json.load(open(path))["push"]["per_tick"]
    full = max(t["count"] for t in ticks)
    steady = sorted(t["p99_ms"] for t in ticks if t["count"] >= full * 0.95)
    p50s = [t["p50_ms"] for t in ticks if t["count"] >= full * 0.95]
    p90 = steady[min(len(steady) - 1, int(len(steady) * 0.9))]
    print(f"{path}: {len(steady)} full ticks; per-tick p99 median {statistics.median(steady):.0f} ms, "
          f"p90 {p90:.0f} ms, max {steady[-1]:.0f} ms; per-tick p50 median {statistics.median(p50s):.0f} ms")
