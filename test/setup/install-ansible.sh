#!/bin/sh
# Installs ansible-core (the playbook run of test/e2e/ansible/apply-playbook.test.ts) from PyPI, at one
# pinned version, into its own virtual environment .cache/ansible (git-ignored). A later run finds it and
# returns at once. Needs Python 3 with venv (Debian: python3-venv, installed when missing and run as root).
set -eu

# The one place the version is set.
VERSION=2.17.14

root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.cache/ansible"
# Written last: an install cut short is made again from the start.
stamp="$venv/installed-$VERSION"

[ -f "$stamp" ] && [ -x "$venv/bin/ansible-playbook" ] && exit 0

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing python3-venv for the tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  else
    echo "the tests need Python 3 with venv (Debian: python3-venv)" >&2
    exit 1
  fi
fi

echo "installing ansible-core $VERSION from PyPI (once; kept in .cache/ansible)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "ansible-core==$VERSION"
touch "$stamp"
