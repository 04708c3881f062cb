#!/bin/sh
# Make sure the Debian packages named as arguments are installed.
# As root this installs what is missing; otherwise it prints the one command to run.
set -eu
missing=""
for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    echo "Installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "Missing Debian packages:$missing. Run: sudo apt-get install -y$missing" >&2
    exit 1
fi
