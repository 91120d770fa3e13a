#!/usr/bin/env bash
# One tstriton process against P processes side by side, on a machine with many cores (bench/cores/scale.ts):
# the one process on one thread (httpThreadCount 1) and with P front-end threads (httpThreadCount P), the P
# processes on one thread each; identity in-process, and mlp with 1, 2, 4, ... P worker instances. The block states
# the goals: P front-end threads ≥ 0.75× P processes (identity), 8 mlp instances ≥ 3× 1 behind P front-end threads.
# The servers run on the first half of the CPUs, the load generators on the second half, unless flags say otherwise.
#
#   bash bench/cores/many-core.sh [P] [flags of scale.js, e.g. --no-write --experiments identity]
#
# P defaults to half the CPUs. Needs only the repository's build (dist/, made here with `npm run build` when it is
# missing) and node_modules (onnxruntime-node for the mlp experiment), node, and taskset for the pinning.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The node the npm scripts run (the project's dev dependency), where it is installed.
export PATH="$PWD/node_modules/.bin:$PATH"
# The servers run under glibc's arena cap as tstriton serve starts them (docs/threads.md#malloc-arenas), unless the
# environment names another: MALLOC_ARENA_MAX=128 measures glibc's own (8 per core) for comparison.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"

cpus=$(nproc)
half=$(( cpus / 2 > 0 ? cpus / 2 : 1 ))
processes=$half
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  processes=$1
  shift
fi
if (( cpus < 2 )); then
  echo "many-core.sh: $cpus CPU: the servers and the load generators need a CPU each at least" >&2
  exit 1
fi
[[ -f dist/bench/cores/scale.js ]] || npm run build

exec node dist/bench/cores/scale.js --processes "$processes" \
  --server-cpus "0-$(( half - 1 ))" --load-cpus "${half}-$(( cpus - 1 ))" "$@"
