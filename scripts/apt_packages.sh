# SPDX-License-Identifier: MIT
# Sourced by scripts/setup.sh and scripts/build_cuda.sh.
# installMissing PACKAGE...: installs with apt-get (after apt-get update) the Debian packages
# among its arguments that are not installed; returns apt-get's status.
installMissing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
