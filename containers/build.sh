#!/bin/sh
# Build the image from the Dockerfile with podman (buildah inside), for `make image` and the
# image tests (tests/deploy/test_image*.py). Layers are cached in the project's image store
# (containers/podman.sh), so a rebuild after a code change reuses the dependencies' layer.
#
# IMAGE_BASE picks the Dockerfile's BASE: `debian` (the default; bases built from Debian
# packages by containers/base.sh, for machines that reach no container registry: one for the
# image, one with venv and binutils for its build stages), `release`
# (the Dockerfile's pinned python:*-slim digest), or any image name.
# PIP_CA_BUNDLE is a CA bundle mounted for the pip step only (default: the host's, so a
# TLS-intercepting proxy in front of PyPI is trusted as the host trusts it; empty for none).
# IIDFILE, if set, is where the built image's ID is written (the tests run the image by ID: the
# tag may be moved meanwhile by a build from another work tree sharing the image store).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
image=${IMAGE:-localhost/rollout-sentinel:0.1.0}
base=${IMAGE_BASE:-debian}
ca=${PIP_CA_BUNDLE-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}

set -- --tag "$image" --layers --network host
if [ -n "${IIDFILE:-}" ]; then
    set -- "$@" --iidfile "$IIDFILE"
fi
case $base in
    debian)
        # Assigned first, so that a failed base build stops this script.
        runtime_base=$("$here/base.sh")
        build_base=$("$here/base.sh" build)
        set -- "$@" --pull=never --build-arg "BASE=$runtime_base" --build-arg "BUILD_BASE=$build_base" ;;
    release) ;;
    *) set -- "$@" --build-arg "BASE=$base" ;;
esac
if [ -n "$ca" ]; then
    [ -r "$ca" ] || { echo "containers/build.sh: PIP_CA_BUNDLE $ca is not a readable file" >&2; exit 1; }
    set -- "$@" --volume "$ca:/run/pip-ca.crt:ro" --build-arg PIP_CERT=/run/pip-ca.crt
fi
# Builds are CPU-heavy and the machine may be shared.
exec nice "$here/podman.sh" build "$@" --file "$root/Dockerfile" "$root"
