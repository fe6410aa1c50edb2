#!/bin/sh
# Prometheus and promtool from Debian's prometheus package, for the tests that scrape tunnelward with a real
# Prometheus (test/e2e/prometheus/) and check the example alert rules (examples/prometheus/). Only the two binaries
# are taken out of the package into .cache/prometheus (git-ignored): the package is downloaded and unpacked, never
# installed, so no service, user or unit of the package's is made, started or enabled on this host. A later run finds
# them and returns at once.
set -eu

root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/.cache/prometheus"
# Written last: an unpack cut short is made again from the start.
stamp="$dir/installed"

[ -f "$stamp" ] && [ -x "$dir/bin/prometheus" ] && [ -x "$dir/bin/promtool" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
  echo "the tests need Debian's prometheus package (apt-get and dpkg-deb to fetch it)" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetching Debian's prometheus package for the tests (once; its binaries are kept in .cache/prometheus)" >&2
if ! (cd "$work" && apt-get download -qq prometheus >/dev/null 2>&1); then
  # The package lists may be missing (a fresh image): read them, as root, and try again.
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null
    (cd "$work" && apt-get download -qq prometheus >/dev/null)
  else
    echo "apt-get download prometheus failed; run apt-get update as root, then npm test again" >&2
    exit 1
  fi
fi
dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
rm -rf "$dir"
mkdir -p "$dir/bin"
cp "$work/root/usr/bin/prometheus" "$work/root/usr/bin/promtool" "$dir/bin/"
dpkg-deb -f "$work"/prometheus_*.deb Version >"$stamp"
