#!/bin/sh
# Create (or update) the virtualenv with the project, editable, and its test extras, for `make venv`.
#
# The wheels come from a wheelhouse cached outside the tree, one per pyproject.toml, Python
# version and machine: the first run downloads them (what `pip install` would have), every
# later venv of any work tree or clean clone installs from it without asking the index. Measured
# on the 2-core machine (docs/testkit.md#parallel-runs): 69 s to install from the index, most of
# it resolving against it, against 19 s from the wheelhouse. pip then does not compile what it
# installed (on one core); compileall does, on every core.
# Usage: scripts/venv.sh PYTHON VENV
set -eu
python=$1
venv=$2
key=$({ cat pyproject.toml; "$python" -c 'import platform, sys; print(sys.version, platform.machine())'; } | sha256sum | cut -c1-16)
wheels=${XDG_CACHE_HOME:-$HOME/.cache}/rollout-sentinel/wheels/$key
test -x "$venv/bin/python" || "$python" -m venv "$venv"
pip="$venv/bin/pip --quiet --disable-pip-version-check"
if [ ! -e "$wheels/.complete" ]; then
    echo "scripts/venv.sh: downloading the wheels into $wheels"
    mkdir -p "$(dirname "$wheels")"
    # Filled beside and renamed in one step, so that a run beside this one (or an interrupted
    # download) never sees half a wheelhouse.
    partial=$(mktemp -d "$wheels.XXXXXX")
    $pip download --dest "$partial" '.[test]' 'setuptools>=68'
    touch "$partial/.complete"
    mv -T "$partial" "$wheels" 2>/dev/null || rm -rf "$partial"
fi
$pip install --no-index --find-links "$wheels" --no-compile -e '.[test]'
"$venv/bin/python" -m compileall -q -j 0 "$venv/lib"
