#!/bin/sh
# Installs schemathesis (the property-based conformance run of test/daemon/http/conformance.test.ts) from PyPI, at one
# pinned version, into its own virtual environment .cache/schemathesis (git-ignored). A later run finds it and
# returns at once. Needs Python 3 with venv (Debian: python3-venv, installed when missing and run as root).
set -eu

# The one place the version is set.
VERSION=4.32.5

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.cache/schemathesis"
# Written last: an install cut short is made again from the start.
stamp="$venv/installed-$VERSION"

[ -f "$stamp" ] && [ -x "$venv/bin/st" ] && exit 0

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing python3-venv for the tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  else
    echo "the tests need Python 3 with venv (Debian: python3-venv)" >&2
    exit 1
  fi
fi

echo "installing schemathesis $VERSION from PyPI (once; kept in .cache/schemathesis)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
touch "$stamp"
