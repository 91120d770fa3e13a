#!/usr/bin/env bash
# Installs what the interop tests drive the server with, if it is not there yet (idempotent, quick when done):
#   - Python: tritonclient[all], numpy, pytest, pytest-timeout, pillow, openai (the OpenAI API's client), grpcio-tools,
#     grpcio-health-checking, onnx, onnxruntime
#   - perf_analyzer: the binary shipped in tritonclient 2.51.0's wheel (the newest that runs on glibc 2.36),
#     in its own venv so that the tritonclient above stays current; it needs libb64 from Debian and the
#     CUDA runtime library from PyPI to load, though it runs on CPU-only machines.
#   - chromium (Debian's), for the API reference page's browser test.
set -euo pipefail
PA_VENV=${PA_VENV:-/opt/perf_analyzer}

have_py() { python3 -c 'import tritonclient.http, tritonclient.grpc, numpy, pytest, pytest_timeout, PIL, grpc_tools, grpc_health.v1, onnx, onnxruntime, openai' >/dev/null 2>&1; }
if ! have_py; then
  python3 -m pip install -q "tritonclient[all]" numpy pytest pytest-timeout pillow openai
  # The repository tests write their ONNX models with onnx and check the server's numbers against onnxruntime.
  python3 -m pip install -q onnx onnxruntime
  # grpcio-tools compiles our .proto files for the field-number check; the pin keeps tritonclient's protobuf<7.
  python3 -m pip install -q grpcio-tools grpcio-health-checking "protobuf>=6.30,<7"
fi

if ! perf_analyzer --version >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && ! ldconfig -p | grep -q libb64.so.0d; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends libb64-0d >/dev/null
  fi
  [ -x "$PA_VENV/bin/python" ] || python3 -m venv "$PA_VENV"
  "$PA_VENV/bin/pip" install -q --no-deps "tritonclient==2.51.0" "nvidia-cuda-runtime-cu12==12.9.79"
  cudart=$("$PA_VENV/bin/python" -c 'import nvidia.cuda_runtime as m, os; print(os.path.join(list(m.__path__)[0], "lib"))')
  bin_dir=/usr/local/bin
  [ -w "$bin_dir" ] || bin_dir="$HOME/.local/bin"
  mkdir -p "$bin_dir"
  cat > "$bin_dir/perf_analyzer" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$cudart\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$PA_VENV/bin/perf_analyzer" "\$@"
WRAP
  chmod +x "$bin_dir/perf_analyzer"
fi
perf_analyzer --version

# The OpenAPI page's browser test: Debian's headless Chromium, driven by playwright-core (no browser download).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# The deployment tests' tools: podman, helm, kubeconform, haproxy, ... (scripts/install-deploy-tools.sh).
bash "$(dirname "$0")/install-deploy-tools.sh"
