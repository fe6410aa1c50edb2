#!/usr/bin/env bash
# host.sh: a throwaway real systemd for the tests, in namespaces of its own.
#
# Boots /lib/systemd/systemd as PID 1 of new pid, mount, cgroup, uts and ipc namespaces (the network and the
# filesystem stay shared with the host), prints "ready <pid>" (the host's pid of that systemd: run commands in it
# with `nsenter -t <pid> -a`), and powers it off when its standard input closes (so it ends with the test process
# that started it, however that ends). Exit status 2 when no systemd could be booted.
#
# Everything that would act on the shared host is kept off: units that touch it are masked (systemd-tmpfiles would
# empty the host's /tmp; udev, sysctl, clock sync and the like act on the host), and inside its mount namespace
# /etc/systemd/system and /var/log/journal are empty tmpfs of its own, so the units and journal it writes vanish
# with it and never meet another such systemd's. Needs root and Debian's systemd package.
# TUNNELWARD_SYSTEMD_LOG_TARGET sets where PID 1 logs (default journal-or-kmsg; "console" keeps it out of the
# journal, as on a host whose PID 1 logs elsewhere).
set -uo pipefail

[ "$(id -u)" = 0 ] || { echo "host.sh: needs root" >&2; exit 2; }
[ -x /lib/systemd/systemd ] || { echo "host.sh: /lib/systemd/systemd missing (apt-get install -y systemd)" >&2; exit 2; }

# In a container, systemd reads its "kernel command line" from its own arguments: systemd.mask= works there.
masks=()
for u in systemd-tmpfiles-setup.service systemd-tmpfiles-setup-dev.service systemd-tmpfiles-setup-dev-early.service \
  systemd-tmpfiles-clean.service systemd-tmpfiles-clean.timer \
  systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service systemd-udevd-control.socket \
  systemd-udevd-kernel.socket systemd-hwdb-update.service \
  systemd-sysctl.service systemd-modules-load.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \
  systemd-timesyncd.service systemd-sysusers.service systemd-firstboot.service systemd-machine-id-commit.service \
  systemd-random-seed.service systemd-remount-fs.service systemd-journal-flush.service systemd-update-utmp.service \
  ldconfig.service console-getty.service getty.target systemd-logind.service apt-daily.timer apt-daily-upgrade.timer \
  e2scrub_all.timer fstrim.timer man-db.timer logrotate.timer dpkg-db-backup.timer; do
  masks+=("systemd.mask=$u")
done

console="$(mktemp -t tunnelward-systemd.XXXXXX)"
# The private mounts are made by PID 1's shell before it becomes systemd, inside the new mount namespace.
unshare --pid --fork --mount --mount-proc --cgroup --uts --ipc --propagation private \
  env container=tunnelward-test /bin/sh -c '
    mount -t tmpfs -o mode=0755 tunnelward-units /etc/systemd/system || exit 1
    mkdir -p /var/log/journal && mount -t tmpfs -o mode=2755 tunnelward-journal /var/log/journal || exit 1
    exec /lib/systemd/systemd "$@"' systemd --system --show-status=no --log-target="${TUNNELWARD_SYSTEMD_LOG_TARGET:-journal-or-kmsg}" \
  --unit=basic.target "${masks[@]}" >"$console" 2>&1 &
outer=$!

sd=""
stop() {
  if [ -n "$sd" ] && kill -0 "$sd" 2>/dev/null; then
    timeout 30 nsenter -t "$sd" -a systemctl poweroff >/dev/null 2>&1
    for _ in $(seq 1 300); do kill -0 "$outer" 2>/dev/null || break; sleep 0.1; done
  fi
  if kill -0 "$outer" 2>/dev/null; then
    [ -n "$sd" ] && kill -KILL "$sd" 2>/dev/null
    kill -KILL "$outer" 2>/dev/null
  fi
  wait "$outer" 2>/dev/null
  rm -f "$console"
}
trap 'stop; exit 130' INT TERM HUP

for _ in $(seq 1 100); do
  sd="$(pgrep -P "$outer" | head -n 1)"
  [ -n "$sd" ] && break
  sleep 0.05
done
if [ -z "$sd" ]; then echo "host.sh: systemd did not start:" >&2; cat "$console" >&2; stop; exit 2; fi

deadline=$(( $(date +%s) + ${TUNNELWARD_SYSTEMD_BOOT_S:-60} ))
state=""
while [ "$(date +%s)" -lt "$deadline" ]; do
  state="$(timeout 5 nsenter -t "$sd" -a systemctl is-system-running 2>/dev/null)"
  case "$state" in running|degraded) break ;; esac
  kill -0 "$sd" 2>/dev/null || break
  sleep 0.1
done
case "$state" in
  running|degraded) ;;
  *) echo "host.sh: systemd did not come up (state: ${state:-none}); its console:" >&2; tail -n 40 "$console" >&2; stop; exit 2 ;;
esac

echo "ready $sd"
if [ "$#" -gt 0 ]; then
  # With a command: run it inside, then power off (like ../shared/tools/with-systemd).
  nsenter -t "$sd" -a --wd="$PWD" "$@"
  rc=$?
  stop
  exit "$rc"
fi
cat >/dev/null
stop
