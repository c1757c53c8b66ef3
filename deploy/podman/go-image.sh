#!/usr/bin/env bash
# Builds the Go builder image NAME (e.g. localhost/waitroom-go:1.26.8) out of this machine's own Go toolchain
# (`go env GOROOT`) and CA bundle, unless an image of that name exists already. For machines that cannot pull
# docker.io/library/golang; elsewhere `make image GO_IMAGE=docker.io/library/golang:1.26` skips it.
#   usage: deploy/podman/go-image.sh NAME [ENGINE]
set -euo pipefail
name="${1:?usage: $0 NAME [ENGINE]}"
engine="${2:-podman}"
here="$(cd "$(dirname "$0")" && pwd)"

if "$engine" image inspect "$name" >/dev/null 2>&1; then
  exit 0
fi
goroot="$(go env GOROOT)"
ca=/etc/ssl/certs/ca-certificates.crt
[ -r "$ca" ] || { echo "go-image: no CA bundle at $ca (install ca-certificates)" >&2; exit 1; }

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
# Hard links when the toolchain is on the same file system (no copy of its 270 MB), a copy otherwise.
cp -al "$goroot" "$ctx/go" 2>/dev/null || cp -a "$goroot" "$ctx/go"
cp "$ca" "$ctx/ca-certificates.crt"
mkdir -m 1777 "$ctx/tmp"
echo "go-image: building $name from $goroot ($("$goroot/bin/go" version))"
"$engine" build -f "$here/go.Containerfile" -t "$name" "$ctx"
