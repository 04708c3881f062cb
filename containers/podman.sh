#!/bin/sh
# podman with the project's own configuration and image store, for `make image` and
# tests/deploy/test_image*.py: CONTAINERS_CONF is containers/containers.conf (runc, file limits
# within the hard limit) and images live in a store outside the tree, so the host's
# /etc/containers and /var/lib/containers are neither read for settings nor written.
# Usage: containers/podman.sh <podman arguments>
set -eu
here=$(cd "$(dirname "$0")" && pwd)
store=${ROLLOUT_SENTINEL_CONTAINERS:-${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/containers}
mkdir -p "$store"
export CONTAINERS_CONF="$here/containers.conf"
exec podman --root "$store/storage" --runroot "$store/run" --storage-driver overlay "$@"
