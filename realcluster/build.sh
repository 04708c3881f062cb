#!/usr/bin/env bash
# Builds what `python -m realcluster` and the real tier's tests run, with `go build` from the
# versions pinned in three Go modules:
#   realcluster/go.mod             kube-apiserver, kube-controller-manager, kube-scheduler, etcd
#   realcluster/kwok/go.mod        kwok (simulated nodes and pods) and its stages file
#   realcluster/prometheus/go.mod  Prometheus 3.x with Kubernetes service discovery
# Called by `make realcluster` (and by anything that needs the binaries first).
# realcluster/binaries.py computes the same cache paths.
#
# The output goes to a cache outside the work tree, one directory per pinned version, so every
# clone and worktree on the machine shares one build and a second run is a no-op. Each group of
# binaries has a stamp (the SHA-256 of its go.mod, go.sum and build flags); a group whose stamp
# matches is not rebuilt. The Go build and module caches stay at Go's defaults (also outside
# the tree). Nothing is fetched except modules from the Go module proxy.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# The first `require`/`tool` version of a module in a go.mod, and the go.mod's `go` line.
pinned() { awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$1"; }
go_line() { awk '$1 == "go" {print $2; exit}' "$1"; }

k8s_version="$(pinned "$here/go.mod" k8s.io/kubernetes)"
etcd_version="$(pinned "$here/go.mod" go.etcd.io/etcd/server/v3)"
kwok_version="$(pinned "$here/kwok/go.mod" sigs.k8s.io/kwok)"
prom_module="$(pinned "$here/prometheus/go.mod" github.com/prometheus/prometheus)"
# Prometheus 3.x publishes its Go module as v0.3XX.Y for release v3.XX.Y.
prom_minor="${prom_module#v0.}"
prom_minor="${prom_minor%%.*}"
prom_version="$((prom_minor / 100)).$((prom_minor % 100)).${prom_module##*.}"
# The newest `go` line of the three is the Go this build needs.
go_needed="$(printf '%s\n' "$(go_line "$here/go.mod")" "$(go_line "$here/kwok/go.mod")" \
	"$(go_line "$here/prometheus/go.mod")" | sort -rV | head -n1)"
what="Kubernetes $k8s_version, kwok $kwok_version and Prometheus $prom_version"

cache_root="${REALCLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/realcluster}"
k8s_bin="$cache_root/$k8s_version/bin"
kwok_bin="$cache_root/kwok-$kwok_version/bin"
prom_bin="$cache_root/prometheus-v$prom_version/bin"

# Version stamping: without it the server reports v0.0.0-master+$Format:%H$ and kubectl shows that.
major="${k8s_version#v}"
major="${major%%.*}"
minor="${k8s_version#v*.}"
minor="${minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version"
kwok_ldflags+=" -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$k8s_version"
prom_ldflags="-s -w"
for field in "Version=$prom_version" "Revision=$prom_module" "Branch=HEAD" \
	"BuildUser=realcluster" "BuildDate=19700101-00:00:00"; do
	prom_ldflags+=" -X github.com/prometheus/common/version.$field"
done
# netgo as Prometheus releases it. Without the `builtinassets` tag (its generated UI assets are
# not in the Go module) the web UI is absent; the HTTP API, all the tests use, is complete.
prom_tags="netgo"

# Stamps: what a group was built from. The control plane's keeps the formula of the first
# version of this script, so binaries built by it stay valid.
stamp_of() { (cat "$1/go.mod" "$1/go.sum" && echo "$2") | sha256sum | cut -d' ' -f1; }
k8s_stamp="$(stamp_of "$here" "CGO_ENABLED=0 -trimpath -ldflags=$k8s_ldflags")"
sched_stamp="$(stamp_of "$here" "CGO_ENABLED=0 -trimpath -ldflags=$k8s_ldflags kube-scheduler")"
kwok_stamp="$(stamp_of "$here/kwok" "CGO_ENABLED=0 -trimpath -ldflags=$kwok_ldflags stages")"
prom_stamp="$(stamp_of "$here/prometheus" "CGO_ENABLED=0 -trimpath -tags=$prom_tags -ldflags=$prom_ldflags")"

# current STAMP_FILE WANT FILE...: the stamp matches and every file is there.
current() {
	local stamp_file="$1" want="$2"
	shift 2
	[[ -f "$stamp_file" && "$(cat "$stamp_file")" == "$want" ]] || return 1
	local f
	for f in "$@"; do [[ -e "$f" ]] || return 1; done
}
# Arguments name the groups to consider (control-plane, scheduler, kwok, prometheus); none: all.
groups=("$@")
((${#groups[@]})) || groups=(control-plane scheduler kwok prometheus)
stale=()
for group in "${groups[@]}"; do
	case "$group" in
	control-plane)
		current "$k8s_bin/.build-stamp" "$k8s_stamp" "$k8s_bin/etcd" "$k8s_bin/kube-apiserver" \
			"$k8s_bin/kube-controller-manager" || stale+=(control-plane)
		;;
	scheduler)
		current "$k8s_bin/.build-stamp.kube-scheduler" "$sched_stamp" "$k8s_bin/kube-scheduler" ||
			stale+=(scheduler)
		;;
	kwok)
		current "$kwok_bin/.build-stamp" "$kwok_stamp" "$kwok_bin/kwok" "$kwok_bin/stages.yaml" ||
			stale+=(kwok)
		;;
	prometheus)
		current "$prom_bin/.build-stamp" "$prom_stamp" "$prom_bin/prometheus" || stale+=(prometheus)
		;;
	*)
		echo "realcluster: unknown group $group (control-plane, scheduler, kwok, prometheus)" >&2
		exit 2
		;;
	esac
done
if ((${#stale[@]} == 0)); then
	echo "realcluster: $what (etcd $etcd_version) are up to date in $cache_root"
	exit 0
fi

# GOTOOLCHAIN=local unless the caller chose otherwise: an older go must not quietly fetch a
# newer toolchain; it must say so instead (and the message names the opt-in).
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
need_go() {
	echo "realcluster: needs Go >= $go_needed to build $what ($1): install Go ${go_needed%.*} or newer (go.dev/dl) and put it on PATH, or with Go >= 1.21 run \`GOTOOLCHAIN=go$go_needed make realcluster\` to fetch that toolchain through the Go module proxy" >&2
	exit 1
}
command -v go >/dev/null 2>&1 || need_go "no go on PATH"
have_go="$(go env GOVERSION 2>/dev/null || true)"
have_go="${have_go#go}"
if [[ -z "$have_go" ]] || [[ "$(printf '%s\n%s\n' "$go_needed" "$have_go" | sort -V | head -n1)" != "$go_needed" ]]; then
	need_go "found ${have_go:-an unusable go}"
fi

# Static binaries as upstream releases them; nice so a build does not starve the tests of
# whoever else shares the machine.
export CGO_ENABLED=0
scratch=()
trap 'rm -rf "${scratch[@]}"' EXIT
total_start=$SECONDS
echo "realcluster: building ${stale[*]} with $(go version) into $cache_root"

# build_group MODULE_DIR BIN_DIR STAMP_FILE STAMP LDFLAGS TAGS NAME=PACKAGE...
# Builds into a scratch directory beside the final one, then moves the files into place and
# writes the stamp last: an interrupted build never leaves a half-written binary under a name
# the launcher would trust.
build_group() {
	local module="$1" bin="$2" stamp_file="$3" stamp="$4" ldflags="$5" tags="$6"
	shift 6
	mkdir -p "$bin"
	local work
	work="$(mktemp -d "$bin/.build.XXXXXX")"
	scratch+=("$work")
	local spec name pkg start
	for spec in "$@"; do
		name="${spec%%=*}"
		pkg="${spec#*=}"
		start=$SECONDS
		echo "realcluster: go build $pkg -> $bin/$name"
		(cd "$module" && nice -n 10 go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$work/$name" "$pkg")
		echo "realcluster: $name built in $((SECONDS - start)) s"
	done
	if [[ -n "${extra_file:-}" ]]; then cp "$extra_file" "$work/"; fi
	local f
	for f in "$work"/*; do mv -f "$f" "$bin/"; done
	echo "$stamp" >"$stamp_file"
}

# kwok's standalone binary finds no stages unless given them as a config file ("no stages
# found"): the node and pod lifecycles from the pinned module's own kustomize/stage/.
# `go list -m` names no directory for a module not yet in the module cache (a fresh machine:
# kwok's stages are read before kwok is built), so the module is downloaded first.
kwok_stages() {
	local dir stage
	dir="$(cd "$here/kwok" && go mod download sigs.k8s.io/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
	if [[ -z "$dir" || ! -d "$dir/kustomize/stage" ]]; then
		echo "realcluster: sigs.k8s.io/kwok $kwok_version has no kustomize/stage in the module cache (${dir:-no directory})" >&2
		return 1
	fi
	for stage in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready \
		pod/fast/pod-complete pod/fast/pod-delete; do
		echo "---"
		echo "# $stage.yaml of sigs.k8s.io/kwok $kwok_version"
		cat "$dir/kustomize/stage/$stage.yaml"
	done
}

for group in "${stale[@]}"; do
	case "$group" in
	control-plane)
		build_group "$here" "$k8s_bin" "$k8s_bin/.build-stamp" "$k8s_stamp" "$k8s_ldflags" "" \
			etcd=go.etcd.io/etcd/server/v3 \
			kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
			kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager
		;;
	scheduler)
		build_group "$here" "$k8s_bin" "$k8s_bin/.build-stamp.kube-scheduler" "$sched_stamp" \
			"$k8s_ldflags" "" kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
		;;
	kwok)
		stages="$(mktemp -d)"
		scratch+=("$stages")
		kwok_stages >"$stages/stages.yaml"
		extra_file="$stages/stages.yaml" build_group "$here/kwok" "$kwok_bin" \
			"$kwok_bin/.build-stamp" "$kwok_stamp" "$kwok_ldflags" "" kwok=sigs.k8s.io/kwok/cmd/kwok
		;;
	prometheus)
		build_group "$here/prometheus" "$prom_bin" "$prom_bin/.build-stamp" "$prom_stamp" \
			"$prom_ldflags" "$prom_tags" prometheus=github.com/prometheus/prometheus/cmd/prometheus
		;;
	esac
done
echo "realcluster: ${stale[*]} built in $((SECONDS - total_start)) s; $what (etcd $etcd_version) in $cache_root"
