#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd used by integration tests from the Go
# module proxy, once per machine, into a cache outside the repository:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/<versions>/{kube-apiserver,etcd}
# Prints the directory. Skips the build when the binaries are present.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
STAGING_VERSION="v0${KUBE_VERSION#v1}"   # v1.37.2 -> v0.37.2
cache="${XDG_CACHE_HOME:-$HOME/.cache}/istiod-testbin/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
mkdir -p "$cache"

build_in_module() { # dir module-require... -- package output
	local dir="$1"; shift
	( cd "$dir" && GOFLAGS=-mod=mod "$@" )
}

if [ ! -x "$cache/etcd" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cat > "$work/go.mod" <<MOD
module testbin/etcd

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
	cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
	echo "building etcd $ETCD_VERSION" >&2
	build_in_module "$work" go mod tidy >&2
	build_in_module "$work" env CGO_ENABLED=0 go build -trimpath -o "$cache/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
	mv "$cache/etcd.tmp" "$cache/etcd"
	rm -rf "$work"; trap - EXIT
fi

if [ ! -x "$cache/kube-apiserver" ]; then
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
	{
		echo "module testbin/kube"
		echo
		echo "go 1.26"
		echo
		echo "require k8s.io/kubernetes $KUBE_VERSION"
		echo
		echo "replace ("
		# every staging module k8s.io/kubernetes replaces locally, at its published version
		sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$STAGING_VERSION"'#p' "$gomod"
		echo ")"
	} > "$work/go.mod"
	echo "building kube-apiserver $KUBE_VERSION (this takes several minutes once per machine)" >&2
	cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
	build_in_module "$work" go mod tidy >&2
	build_in_module "$work" env CGO_ENABLED=0 go build -trimpath -o "$cache/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
	mv "$cache/kube-apiserver.tmp" "$cache/kube-apiserver"
	rm -rf "$work"; trap - EXIT
fi

echo "$cache"
