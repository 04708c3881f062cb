#!/usr/bin/env bash
# Builds the real control plane for `python -m realcluster`: kube-apiserver,
# kube-controller-manager and etcd, with `go build` from the versions pinned in
# realcluster/go.mod. Called by `make realcluster` (and by anything that needs
# the binaries first). realcluster/binaries.py computes the same cache path.
#
# The output goes to a cache outside the work tree, keyed by the Kubernetes
# version, so every clone and worktree on the machine shares one build and a
# second run is a no-op. The Go build and module caches stay at Go's defaults
# (also outside the tree). Nothing is fetched except modules from the Go module
# proxy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
gomod="$here/go.mod"

# The pinned versions are read from go.mod so that file stays the one place to change them.
k8s_version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$gomod")"
etcd_version="$(awk '$1 == "go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "$gomod")"
go_needed="$(awk '$1 == "go" {print $2; exit}' "$gomod")"

cache_root="${REALCLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/realcluster}"
bin_dir="$cache_root/$k8s_version/bin"
stamp="$bin_dir/.build-stamp"
binaries=(etcd kube-apiserver kube-controller-manager)

# Version stamping: without it the server reports v0.0.0-master+$Format:%H$ and kubectl shows that.
major="${k8s_version#v}"
major="${major%%.*}"
minor="${k8s_version#v*.}"
minor="${minor%%.*}"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

# The stamp records what the binaries were built from; when it matches, there is nothing to do.
goflags="CGO_ENABLED=0 -trimpath -ldflags=$ldflags"
want_stamp="$( (cat "$gomod" "$here/go.sum" && echo "$goflags") | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
	all=1
	for b in "${binaries[@]}"; do [[ -x "$bin_dir/$b" ]] || all=0; done
	if ((all)); then
		echo "realcluster: Kubernetes $k8s_version and etcd $etcd_version are up to date in $bin_dir"
		exit 0
	fi
fi

# GOTOOLCHAIN=local unless the caller chose otherwise: an older go must not quietly fetch a
# newer toolchain; it must say so instead (and the message names the opt-in).
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
need_go() {
	echo "realcluster: needs Go >= $go_needed to build Kubernetes $k8s_version ($1): install Go ${go_needed%.*} or newer (go.dev/dl) and put it on PATH, or with Go >= 1.21 run \`GOTOOLCHAIN=go$go_needed make realcluster\` to fetch that toolchain through the Go module proxy" >&2
	exit 1
}
command -v go >/dev/null 2>&1 || need_go "no go on PATH"
have_go="$(go env GOVERSION 2>/dev/null || true)"
have_go="${have_go#go}"
if [[ -z "$have_go" ]] || [[ "$(printf '%s\n%s\n' "$go_needed" "$have_go" | sort -V | head -n1)" != "$go_needed" ]]; then
	need_go "found ${have_go:-an unusable go}"
fi

mkdir -p "$bin_dir"
# Build into a scratch directory beside the final one: an interrupted build never leaves a
# half-written binary under a name the launcher would trust.
work="$(mktemp -d "$bin_dir/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Static binaries as Kubernetes and etcd release them; nice so a build does not starve the
# tests of whoever else shares the machine.
export CGO_ENABLED=0
cd "$here"
echo "realcluster: building Kubernetes $k8s_version and etcd $etcd_version with $(go version) into $bin_dir"
total_start=$SECONDS
build() {
	local name="$1" pkg="$2" start=$SECONDS
	echo "realcluster: go build $pkg -> $name"
	nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$work/$name" "$pkg"
	echo "realcluster: $name built in $((SECONDS - start)) s"
}
build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager

for b in "${binaries[@]}"; do mv -f "$work/$b" "$bin_dir/$b"; done
echo "$want_stamp" >"$stamp"
echo "realcluster: all built in $((SECONDS - total_start)) s into $bin_dir"
