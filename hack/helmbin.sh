#!/usr/bin/env bash
# Builds the helm binary (helm.sh/helm/v3), used by tests to render Istio's
# Helm charts as Istio's users do, from the Go module proxy, once per
# machine, into a cache outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/helm-<version>/helm
# Prints the directory. Skips the build when the binary is present and
# executable. The build runs in a temporary module, so helm's dependencies
# never enter this repository's go.mod/go.sum. tests/helmbin/helmbin.go
# duplicates the version in its Version constant (a test there fails when
# the two differ).
set -euo pipefail

HELM_VERSION="${HELMBIN_VERSION:-v3.22.0}" # HELMBIN_VERSION overrides
cache="${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/helm-${HELM_VERSION}"

built() { [ -f "$cache/helm" ] && [ -x "$cache/helm" ]; }

if built; then
	echo "$cache"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if built; then
	echo "$cache"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/helmbin.XXXXXX")
cleanup() { rm -rf "$work" "$cache/.helm.tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat > "$work/go.mod" <<MOD
module testbin/helm

go 1.26.0

require helm.sh/helm/v3 $HELM_VERSION
MOD
cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import _ "helm.sh/helm/v3/cmd/helm"
GO

echo "building helm helm.sh/helm/v3@$HELM_VERSION (a few minutes once per machine)" >&2
start=$SECONDS
( cd "$work" && GOFLAGS=-mod=mod go mod tidy ) >&2
( cd "$work" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$cache/.helm.tmp" helm.sh/helm/v3/cmd/helm ) >&2
chmod 0755 "$cache/.helm.tmp"
mv -f "$cache/.helm.tmp" "$cache/helm"
echo "built $cache/helm ($((SECONDS - start))s)" >&2

built
echo "$cache"
