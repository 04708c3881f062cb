#!/bin/sh
# Run Helm, built with `go install` from the Go module proxy at the version pinned here, for
# `make helm` and tests/deploy/test_helm.py. The binary is cached outside the tree, keyed by the
# version, so every work tree shares one build and later runs only run it (a cold build took
# 2.5 min here with Go's caches warm). Usage: charts/helm.sh <helm arguments>
set -eu
version=v4.3.2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/helm/$version
if [ ! -x "$cache/helm" ]; then
    command -v go >/dev/null 2>&1 || { echo "charts/helm.sh: Go is missing: install Go 1.24 or newer to build Helm $version" >&2; exit 1; }
    echo "charts/helm.sh: building Helm $version into $cache" >&2
    mkdir -p "$cache"
    CGO_ENABLED=0 GOBIN="$cache" nice go install -trimpath -ldflags "-s -w" \
        "helm.sh/helm/v4/cmd/helm@$version" >&2
fi
exec "$cache/helm" "$@"
