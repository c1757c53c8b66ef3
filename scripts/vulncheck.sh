#!/usr/bin/env bash
# govulncheck over the module, for `make lint`: the known vulnerabilities of the Go code it reaches, in its
# dependencies and the standard library. It tries the live Go vulnerability database first; when that does
# not answer within VULNCHECK_TIMEOUT (20 s by default: no network, as on the project's machines), it runs
# against the snapshot vendored in scripts/vulndb/ (see its README.md), unpacked into a temp dir. Either
# way it says which database it used, and it fails on a finding.
#
#   scripts/vulncheck.sh [DIR]      DIR: the module to check (default: this repository)
#
# VULNCHECK_DB=live skips the snapshot (a live database that does not answer is then a failure);
# VULNCHECK_DB=snapshot skips the live database.
#
# govulncheck's exit status: 0 nothing found, 3 vulnerabilities found, anything else an error (no answer
# from the database among them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "${1:-$root}" && pwd)
timeout=${VULNCHECK_TIMEOUT:-20s}
want=${VULNCHECK_DB:-any}
case $want in any | live | snapshot) ;; *)
  echo "vulncheck: VULNCHECK_DB is live, snapshot or unset, not \"$want\"" >&2
  exit 2
  ;;
esac
snapshot=$(ls "$root"/scripts/vulndb/vulndb-*.tgz 2>/dev/null | sort | tail -1 || true)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Built from this repository's go.mod (tool golang.org/x/vuln/cmd/govulncheck), so its version is pinned
# whatever module DIR is.
(cd "$root" && go build -o "$work/govulncheck" golang.org/x/vuln/cmd/govulncheck)

# run DB: govulncheck over DIR against DB ("" for the live default); prints its report, returns its status.
run() {
  local db=$1 status=0
  if [ -z "$db" ]; then
    timeout "$timeout" "$work/govulncheck" -C "$dir" ./... >"$work/out" 2>&1 || status=$?
  else
    "$work/govulncheck" -db "$db" -C "$dir" ./... >"$work/out" 2>&1 || status=$?
  fi
  return "$status"
}

# verdict SOURCE STATUS: the end of the check, from govulncheck's status against SOURCE.
verdict() {
  cat "$work/out"
  case $2 in
  0) echo "vulncheck: no vulnerabilities found ($1)" ;;
  3) echo "vulncheck: vulnerabilities found ($1): update the modules named above, or the Go toolchain" >&2 ;;
  *) echo "vulncheck: govulncheck failed with status $2 ($1)" >&2 ;;
  esac
  exit "$2"
}

if [ "$want" != snapshot ]; then
  status=0
  run "" || status=$?
  if [ "$status" = 0 ] || [ "$status" = 3 ]; then
    verdict "the live Go vulnerability database" "$status"
  fi
  if [ "$want" = live ]; then
    verdict "the live Go vulnerability database did not answer" "$status"
  fi
  reason=$(grep -m1 -o 'fetching vulnerabilities.*' "$work/out" || true)
  [ "$status" = 124 ] && reason="no answer within $timeout"
  echo "vulncheck: the live database did not answer (${reason:-status $status}); using the snapshot" >&2
fi

if [ -z "$snapshot" ]; then
  echo "vulncheck: no snapshot in scripts/vulndb/" >&2
  exit 1
fi
mkdir "$work/db"
tar xzf "$snapshot" -C "$work/db"
status=0
run "file://$work/db/vulndb" || status=$?
verdict "the snapshot $(basename "$snapshot" .tgz), not the live database: findings published since are not known" "$status"
