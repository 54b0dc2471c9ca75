# SPDX-License-Identifier: MIT
# Sourced by scripts/fidelity.sh and scripts/fidelity_ddp.sh: the work folder and the priority
# both sides of a fidelity measurement run at, on a machine shared with other work.
# Where the kernel groups processes by session (autogroup: most distributions, VMs included), a
# nice value only orders processes within one session and a build in another terminal still
# takes half the core; as root this also sets the session's autogroup niceness, and puts the old
# one back at exit.
#   etbStartMeasurement NAME NICE   sets WORK (a new temp folder, removed at exit unless
#                                   FIDELITY_KEEP is set), raises the priority, prints the load
ETB_AUTOGROUP_OLD=""

etbFinishMeasurement() {
  if [ -n "$ETB_AUTOGROUP_OLD" ]; then echo "$ETB_AUTOGROUP_OLD" >/proc/self/autogroup 2>/dev/null; fi
  [ -n "${FIDELITY_KEEP:-}" ] || rm -rf "$WORK"
}

etbStartMeasurement() {
  local name=$1 nice=$2
  WORK="$(mktemp -d -t "etb-$name.XXXXXX")"
  trap etbFinishMeasurement EXIT
  if [ "$nice" -lt 0 ] && [ -w /proc/self/autogroup ] && [ "$(id -u)" = 0 ]; then
    ETB_AUTOGROUP_OLD="$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\).*/\1/p' /proc/self/autogroup)"
    if echo "$nice" >/proc/self/autogroup 2>/dev/null; then
      echo "== session autogroup niceness $ETB_AUTOGROUP_OLD -> $nice for the run" >&2
    else
      ETB_AUTOGROUP_OLD=""
    fi
  fi
  echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(getconf _NPROCESSORS_ONLN) cores;" \
    "this run may use CPUs $(taskset -cp $$ 2>/dev/null | sed 's/.*: //')" >&2
}
