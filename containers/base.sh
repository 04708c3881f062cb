#!/bin/sh
# Build the image's bases from Debian packages with mmdebstrap, for machines that reach Debian
# but no container registry, and print the name of the one asked for. Called by
# containers/build.sh (`make image`).
# Usage: containers/base.sh          the runtime base: containers/base-packages
#        containers/base.sh build    the build stages' base: that plus containers/build-packages
#
# The root filesystem is Debian bookworm's "essential" set plus the package lists, without
# documentation or translations, without glibc's iconv modules (gconv, 8 MB: Python's codecs are
# its own, and UTF-8, ASCII and Latin-1 are built into glibc) and without the full Perl (47 MB)
# that mmdebstrap's merged-/usr step brings in with usrmerge (the essential perl-base stays). It is cached outside the tree
# under a key made of this script and the package lists: a second run finds it (tarball and
# image both), a changed list builds a new one (~4-5 min here, mostly downloads).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/image-base
case ${1:-runtime} in
    runtime) lists="$here/base-packages" repository=localhost/rollout-sentinel-base ;;
    build) lists="$here/base-packages $here/build-packages" repository=localhost/rollout-sentinel-build-base ;;
    *) echo "containers/base.sh: no base named $1 (runtime or build)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086  # $lists is a list of paths without spaces
key=$(cat "$here/base.sh" $lists | sha256sum | cut -c1-16)
name=$repository:$key
if "$here/podman.sh" image exists "$name"; then
    echo "$name"
    exit 0
fi
mkdir -p "$cache"
tarball=$cache/$key.tar
if [ ! -s "$tarball" ]; then
    # shellcheck disable=SC2086
    packages=$(cat $lists | grep -v '^#' | tr -s '\n' ',' | sed 's/^,//; s/,$//')
    echo "containers/base.sh: building the base $name from Debian bookworm with mmdebstrap" >&2
    # A fixed timestamp (bookworm's release day) for the files mmdebstrap writes itself.
    SOURCE_DATE_EPOCH=1686355200 mmdebstrap --variant=essential --include="$packages" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*' \
        --customize-hook='chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl perl-modules-5.36 libperl5.36' \
        bookworm "$cache/$key.part.tar" http://deb.debian.org/debian >&2
    mv "$cache/$key.part.tar" "$tarball"
fi
"$here/podman.sh" import --quiet "$tarball" "$name" >/dev/null
echo "$name"
