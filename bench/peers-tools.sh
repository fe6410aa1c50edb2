#!/bin/sh
# What `npm run bench -- --only peers` needs beside tunnelward: Debian's supervisor package (supervisord and
# supervisorctl; the harness runs its own daemon, so the package's service is kept from starting while it is
# installed). pm2 is installed by the harness itself, with npm, into its own directory.
command -v supervisord >/dev/null 2>&1 && command -v supervisorctl >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "the peers bench needs Debian's supervisor package (apt-get install -y supervisor; leave its service off)" >&2
  exit 1
fi
echo "installing Debian's supervisor package for the peers bench" >&2
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  # Debian's convention for "do not start services now": exit status 101 for every action.
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && own_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends supervisor >/dev/null
status=$?
[ "$own_policy" = 1 ] && rm -f "$policy"
exit $status
