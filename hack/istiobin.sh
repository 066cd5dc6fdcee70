#!/usr/bin/env bash
# Builds Istio's own pilot-agent and istioctl (Istio 1.31 line), used by tests
# as real clients of this istiod, from the Go module proxy, once per machine,
# into a cache outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/istio-<version>/{pilot-agent,istioctl}
# Prints the directory. Skips the build when both binaries are present and
# executable. The build runs in a temporary module, so nothing of Istio enters
# this repository's go.mod/go.sum (the project never imports istio.io/istio).
#
# With --peer it builds Istio's pilot-discovery instead, into the same
# directory: the control plane tests/loadtest measures side by side with
# this istiod (`make peerbin`). It is not part of `make testbin` because no
# test needs it and its build adds minutes to CI.
#
# Which version. Istio tags its releases "1.31.0" (no "v"), which are not
# module versions, so the module proxy serves istio.io/istio only as
# pseudo-versions; queries for @release-1.31 and @1.31.x are refused (403).
# Of the three it serves:
#   v0.0.0-20260423205519-b01690e6db7d  master before the 1.31 branch cut
#                                       (VERSION 1.31, tools image master-...,
#                                       istio.io/api v1.30.0-alpha...)
#   v0.0.0-20260826214018-9739e10eb9d7  release-1.30 (VERSION 1.30, api v1.30.4-...)
#   v0.0.0-20260827124520-eed52ebb66ad  release-1.31: VERSION file 1.31,
#                                       common/scripts/setup_env.sh builds with
#                                       IMAGE_VERSION=release-1.31-..., go.mod
#                                       requires istio.io/api v1.31.0-rc.0.0.20260824...
#                                       and istio.io/client-go v1.31.0-rc.0...,
#                                       go 1.26.0 (builds on this machine's go1.26.8)
# we take eed52ebb66ad, the only commit of the release-1.31 branch served.
# Whether it is exactly a 1.31.x tag's commit cannot be told from the module
# zip (it has no git metadata); it is a release-1.31 commit of 2026-08-27.
# tests/istiobin/istiobin.go duplicates this default in its Version constant;
# a test there fails when the two differ.
#
# How it is built: as Istio's Makefile.core.mk builds release binaries, with
# CGO_ENABLED=0, -trimpath and its build tags (AGENT_TAGS for pilot-agent,
# STANDARD_TAGS for istioctl and pilot-discovery), but without its -X version
# ldflags: the binaries report version "unknown", exactly like the locally
# built agent and istioctl recorded in ../shared/reference/security (node
# metadata ISTIO_VERSION "unknown"). -s -w drop the symbol table and DWARF only.
# The first build takes several minutes on 2 cores; later runs return at once.
set -euo pipefail

ISTIO_VERSION="${ISTIOBIN_VERSION:-v0.0.0-20260827124520-eed52ebb66ad}" # ISTIOBIN_VERSION overrides
AGENT_TAGS="agent,disable_pgv,grpcnotrace,retrynotrace" # Istio's Makefile.core.mk
STANDARD_TAGS="vtprotobuf,disable_pgv"                  # Istio's Makefile.core.mk
cache="${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/istio-${ISTIO_VERSION}"

bins="pilot-agent istioctl"
case "${1:-}" in
"") ;;
--peer) bins="pilot-discovery" ;;
*)
	echo "usage: $0 [--peer]" >&2
	exit 2
	;;
esac

built() {
	local b
	for b in $bins; do
		[ -f "$cache/$b" ] && [ -x "$cache/$b" ] || return 1
	done
}

if built; then
	echo "$cache"
	exit 0
fi

mkdir -p "$cache"
# One build at a time per cache directory (make testbin and a second
# checkout may run together); whoever waited finds the binaries built.
exec 9>"$cache/.lock"
flock 9
if built; then
	echo "$cache"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/istiobin.XXXXXX")
cleanup() { rm -rf "$work" "$cache/.pilot-agent.tmp" "$cache/.istioctl.tmp" "$cache/.pilot-discovery.tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat > "$work/go.mod" <<MOD
module testbin/istio

go 1.26.0

require istio.io/istio $ISTIO_VERSION
MOD
cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "istio.io/istio/istioctl/cmd/istioctl"
	_ "istio.io/istio/pilot/cmd/pilot-agent"
	_ "istio.io/istio/pilot/cmd/pilot-discovery"
)
GO

gobuild() { # tags output package
	( cd "$work" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -tags="$1" -ldflags="-s -w" -o "$2" "$3" )
}

echo "building Istio $bins istio.io/istio@$ISTIO_VERSION (several minutes once per machine)" >&2
start=$SECONDS
( cd "$work" && GOFLAGS=-mod=mod go mod tidy ) >&2
for bin in $bins; do
	[ -x "$cache/$bin" ] && continue
	case $bin in
	pilot-agent) gobuild "$AGENT_TAGS" "$cache/.pilot-agent.tmp" istio.io/istio/pilot/cmd/pilot-agent >&2 ;;
	istioctl) gobuild "$STANDARD_TAGS" "$cache/.istioctl.tmp" istio.io/istio/istioctl/cmd/istioctl >&2 ;;
	pilot-discovery) gobuild "$STANDARD_TAGS" "$cache/.pilot-discovery.tmp" istio.io/istio/pilot/cmd/pilot-discovery >&2 ;;
	esac
	chmod 0755 "$cache/.$bin.tmp"
	mv -f "$cache/.$bin.tmp" "$cache/$bin" # same directory: an atomic rename
	echo "built $cache/$bin ($((SECONDS - start))s so far)" >&2
done

built
echo "$cache"
