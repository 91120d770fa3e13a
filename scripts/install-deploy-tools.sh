#!/usr/bin/env bash
# Installs what the deployment tests (test/deploy) build, lint, render and run with, if it is not there yet
# (idempotent, quick when done). Debian packages need root; Go tools build from the module proxy into
# ${DEPLOY_TOOLS_BIN:-/usr/local/bin}.
set -euo pipefail
BIN=${DEPLOY_TOOLS_BIN:-/usr/local/bin}
export PATH="$BIN:/usr/local/go/bin:$PATH"

apt_install() { # package...: installs the Debian packages that are missing
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || { echo "need root to install ${missing[*]}" >&2; return 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

go_install() { # binary module@version: builds a Go tool unless it is on the PATH
  command -v "$1" >/dev/null 2>&1 && return 0
  GOBIN="$BIN" go install "$2"
}

# --- container image (test/deploy/test_container.py) ---

# --- chart and manifests (test/deploy/test_manifests.py) ---

# --- load balancer (test/deploy/test_scale_out.py) ---
# haproxy: the balancer the scale-out test starts itself (its own process and config on free ports; a system
# service the package may start is not used).
apt_install haproxy
