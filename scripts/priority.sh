# SPDX-License-Identifier: MIT
# Sourced by the fidelity scripts: run a measurement at a raised priority on a machine shared
# with other work. Where the kernel groups processes by session (autogroup: most distributions,
# VMs included), a nice value only orders processes within one session and a build in another
# terminal still takes half the core; as root this also sets the session's autogroup niceness.
#   etbRaisePriority NICE   (NICE < 0 and root: autogroup niceness; the old one in ETB_AUTOGROUP_OLD)
#   etbRestorePriority      (puts the old autogroup niceness back; call it from the EXIT trap)
ETB_AUTOGROUP_OLD=""

etbRaisePriority() {
  local nice=$1
  if [ "$nice" -lt 0 ] && [ -w /proc/self/autogroup ] && [ "$(id -u)" = 0 ]; then
    ETB_AUTOGROUP_OLD="$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\).*/\1/p' /proc/self/autogroup)"
    if echo "$nice" >/proc/self/autogroup 2>/dev/null; then
      echo "== session autogroup niceness $ETB_AUTOGROUP_OLD -> $nice for the run" >&2
    else
      ETB_AUTOGROUP_OLD=""
    fi
  fi
}

etbRestorePriority() {
  if [ -n "$ETB_AUTOGROUP_OLD" ]; then echo "$ETB_AUTOGROUP_OLD" >/proc/self/autogroup 2>/dev/null; fi
  ETB_AUTOGROUP_OLD=""
}
