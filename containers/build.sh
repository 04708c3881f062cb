#!/bin/sh
# Build the image from the Dockerfile with podman (buildah inside), for `make image` and the
# image tests (tests/deploy/test_image*.py). Layers are cached in the project's image store
# (containers/podman.sh), so a rebuild after a code change reuses the dependencies' layer.
#
# IMAGE_BASE picks the Dockerfile's BASE: `debian` (the default; a base built from Debian
# packages by containers/base.sh, for machines that reach no container registry), `release`
# (the Dockerfile's pinned python:*-slim digest), or any image name.
# PIP_CA_BUNDLE is a CA bundle mounted for the pip step only (default: the host's, so a
# TLS-intercepting proxy in front of PyPI is trusted as the host trusts it; empty for none).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
image=${IMAGE:-localhost/rollout-sentinel:0.1.0}
base=${IMAGE_BASE:-debian}
ca=${PIP_CA_BUNDLE-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}

set -- --tag "$image" --layers --network host
case $base in
    debian) set -- "$@" --pull=never --build-arg "BASE=$("$here/base.sh")" ;;
    release) ;;
    *) set -- "$@" --build-arg "BASE=$base" ;;
esac
if [ -n "$ca" ]; then
    [ -r "$ca" ] || { echo "containers/build.sh: PIP_CA_BUNDLE $ca is not a readable file" >&2; exit 1; }
    set -- "$@" --volume "$ca:/run/pip-ca.crt:ro" --build-arg PIP_CERT=/run/pip-ca.crt
fi
# Builds are CPU-heavy and the machine may be shared.
exec nice "$here/podman.sh" build "$@" --file "$root/Dockerfile" "$root"
