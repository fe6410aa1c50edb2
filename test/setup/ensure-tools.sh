#!/bin/sh
# Tools the tests use from Debian's packages: systemd-analyze (package systemd) checks generated units,
# start-stop-daemon (dpkg) runs the init.d scripts, mkfifo (coreutils) makes the tunnels' output pipes.
# A throwaway systemd for the systemd-mode tests (test/systemd/host.sh) needs systemd, nsenter/unshare (util-linux)
# and pgrep (procps). openssl makes the self-signed certificates of the TLS tests. The web console's tests drive
# Debian's Chromium (/usr/bin/chromium) through playwright-core. nginx stands in front of the daemon as the operator
# guide's reverse proxy (run by the test itself, with its own config; the package's own service is not used).
# setfacl and getfacl (acl) give a run user that shares its primary group read access to its config file alone.
# The commands the docs show, which the doc test runs (test/docs/), use curl, jq and python3 (a web server to tunnel).
# Installs what is missing when it can (root with apt-get); otherwise says what to install.
missing=""
command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
command -v start-stop-daemon >/dev/null 2>&1 || missing="$missing dpkg"
command -v mkfifo >/dev/null 2>&1 || missing="$missing coreutils"
command -v pgrep >/dev/null 2>&1 || missing="$missing procps"
command -v nsenter >/dev/null 2>&1 || missing="$missing util-linux"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
command -v setfacl >/dev/null 2>&1 && command -v getfacl >/dev/null 2>&1 || missing="$missing acl"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
command -v python3 >/dev/null 2>&1 || missing="$missing python3"
[ -x /usr/sbin/nginx ] || missing="$missing nginx"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing for the tests:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "the tests need these Debian packages:$missing (install them, then run npm test again)" >&2
  exit 1
fi
