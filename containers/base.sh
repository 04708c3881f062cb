#!/bin/sh
# Build the image's base from Debian packages with mmdebstrap, for machines that reach Debian
# but no container registry, and print its name. Called by containers/build.sh (`make image`).
#
# The root filesystem is Debian bookworm's "essential" set plus containers/base-packages, without
# documentation or translations, and without the full Perl (47 MB) that mmdebstrap's merged-/usr
# step brings in with usrmerge (the essential perl-base stays). It is cached outside the tree
# under a key made of this script and the package list: a second run finds it (tarball and
# image both), a changed list builds a new one (~4-5 min here, mostly downloads).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/image-base
key=$(cat "$here/base.sh" "$here/base-packages" | sha256sum | cut -c1-16)
name=localhost/rollout-sentinel-base:$key
if "$here/podman.sh" image exists "$name"; then
    echo "$name"
    exit 0
fi
mkdir -p "$cache"
tarball=$cache/$key.tar
if [ ! -s "$tarball" ]; then
    packages=$(grep -v '^#' "$here/base-packages" | tr -s '\n' ',' | sed 's/^,//; s/,$//')
    echo "containers/base.sh: building the base $name from Debian bookworm with mmdebstrap" >&2
    # A fixed timestamp (bookworm's release day) for the files mmdebstrap writes itself.
    SOURCE_DATE_EPOCH=1686355200 mmdebstrap --variant=essential --include="$packages" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --customize-hook='chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl perl-modules-5.36 libperl5.36' \
        bookworm "$cache/$key.part.tar" http://deb.debian.org/debian >&2
    mv "$cache/$key.part.tar" "$tarball"
fi
"$here/podman.sh" import --quiet "$tarball" "$name" >/dev/null
echo "$name"
