#!/usr/bin/env bash
# Runs the interop suite alone: builds, then drives the example server with Triton's own Python clients and
# perf_analyzer (pytest on test/interop). Extra arguments go to pytest, e.g. `npm run test:interop -- -k grpc`.
set -eu
cd "$(dirname "$0")/.."
bash scripts/install-test-tools.sh >/dev/null || echo "warning: could not install the interop test tools (see scripts/install-test-tools.sh)"
npm run --silent build
exec python3 -m pytest test/interop -q -p no:cacheprovider "$@"
