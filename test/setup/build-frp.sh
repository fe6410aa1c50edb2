#!/bin/sh
# Builds the real frp client and server (frpc, frps) that the tests and the bench run, from frp's Go module at one
# pinned version, into .cache/frp/<version>/ (git-ignored); .cache/frp/current points at the version in use.
# A later run finds them built and returns at once. Nothing built is committed.
#
# frp's go.mod has a replace directive, so `go install .../cmd/frpc@version` refuses it: the module is fetched
# through the Go module proxy (`go mod download`) and built in its own directory. The web dashboards are left out
# (tag noweb: their assets are not in the module).
set -eu

root="$(cd "$(dirname "$0")/../.." && pwd)"
# The version is set in one place, the file frp-version (what `tunnelward frp install` installs too);
# TUNNELWARD_FRP_VERSION tries another.
FRP_VERSION="${TUNNELWARD_FRP_VERSION:-$(cat "$root/frp-version")}"
cache="$root/.cache/frp"
out="$cache/$FRP_VERSION"

if [ -x "$out/frpc" ] && [ -x "$out/frps" ]; then
  ln -sfn "$FRP_VERSION" "$cache/current"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "the tests run the real frpc and frps, built from source: install Go 1.21 or later (https://go.dev/dl/ or Debian's golang-go), then run npm test again" >&2
  exit 1
fi

started=$(date +%s)
echo "building frpc and frps $FRP_VERSION with $(go version | cut -d' ' -f3) (once; kept in .cache/frp)" >&2
export GOFLAGS=-mod=readonly CGO_ENABLED=0
dir="$(go mod download -json "github.com/fatedier/frp@$FRP_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "cannot fetch github.com/fatedier/frp@$FRP_VERSION through the Go module proxy ($(go env GOPROXY))" >&2
  exit 1
fi

mkdir -p "$cache"
work="$(mktemp -d "$cache/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# Built into a temp dir and moved in whole: a build cut short never leaves a half-written binary behind.
(cd "$dir" && go build -trimpath -ldflags "-s -w" -tags frpc,noweb -o "$work/frpc" ./cmd/frpc)
(cd "$dir" && go build -trimpath -ldflags "-s -w" -tags frps,noweb -o "$work/frps" ./cmd/frps)
"$work/frpc" -v >/dev/null
rm -rf "$out"
chmod 755 "$work"
mv "$work" "$out"
trap - EXIT
ln -sfn "$FRP_VERSION" "$cache/current"
echo "built frpc and frps $("$out/frpc" -v) in $(($(date +%s) - started)) s" >&2
