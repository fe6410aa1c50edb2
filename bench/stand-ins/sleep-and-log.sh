#!/bin/sh
# A tunnel-client stand-in for scale benchmarks: takes -c <file> like frpc, says it started, then sleeps; and
# `verify -c <file>` (what tunnelward asks of a new file) finds any file readable good.
# Tiny on purpose (one shell and one sleep), so that the host's memory is not what limits a thousand of them.
if [ "$1" = "verify" ] && [ "$2" = "-c" ] && [ -r "$3" ]; then
  echo "frpc: the configuration file $3 syntax is ok"
  exit 0
fi
if [ "$1" != "-c" ] || [ ! -r "$2" ]; then
  echo "usage: $0 -c <config file>" >&2
  exit 1
fi
echo "[I] stand-in started with config file [$2]"
while :; do sleep 3600; done
