#!/usr/bin/env bash
# Installs what bench/peers/run.py needs (idempotent): PyTriton and MLServer in their own virtual environments,
# ghz (from the Go module proxy), wrk (Debian), perf_analyzer (scripts/install-test-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTRITON_VENV=${PEERS_PYTRITON_VENV:-/opt/peers-pytriton}
MLSERVER_VENV=${PEERS_MLSERVER_VENV:-/opt/peers-mlserver}

if ! "$PYTRITON_VENV/bin/python" -c 'import pytriton, onnxruntime, matplotlib, tritonclient.grpc' >/dev/null 2>&1; then
  python3 -m venv "$PYTRITON_VENV"
  # PyTriton bundles tritonserver; its Python side needs numpy<2.
  "$PYTRITON_VENV/bin/pip" install -q nvidia-pytriton "numpy<2" onnxruntime matplotlib
fi
if ! "$MLSERVER_VENV/bin/python" -c 'import mlserver, onnxruntime' >/dev/null 2>&1; then
  python3 -m venv "$MLSERVER_VENV"
  "$MLSERVER_VENV/bin/pip" install -q mlserver onnxruntime
fi
if ! command -v ghz >/dev/null; then
  GOBIN=/usr/local/bin /usr/local/go/bin/go install github.com/bojand/ghz/cmd/ghz@latest
fi
if ! command -v wrk >/dev/null; then
  apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi
bash scripts/install-test-tools.sh >/dev/null
echo "bench/peers: ready ($("$PYTRITON_VENV/bin/python" -c 'import importlib.metadata as m; print("PyTriton", m.version("nvidia-pytriton"))'), $("$MLSERVER_VENV/bin/mlserver" --version 2>/dev/null || echo MLServer))"
