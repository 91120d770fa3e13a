#!/usr/bin/env bash
# The GPU code paths, checked on a machine with an NVIDIA GPU (CI has none). Needs `npm run build`'s dist/, the
# production node_modules and Node 20 on the PATH. Writes what it saw under ${OUT:-/tmp/gpu-check}:
#   1. nvidia-smi, and the GPU metrics tstriton reads from it (scripts/gpu-metrics-check.js);
#   2. a server's metrics port on that machine: the nv_gpu_* series beside the inference counters;
#   3. an ONNX model with one instance on gpu:0 (`--device gpu:0`): served through the CUDA execution provider
#      where onnxruntime-node has its CUDA libraries, else refused with the error that says how to install them.
set -u
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
MODEL=test/fixtures/onnx/identity_fp32.onnx

echo "== nvidia-smi"
nvidia-smi -L
nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.total,memory.used,power.draw,power.limit --format=csv,noheader,nounits | tee "$OUT/nvidia-smi.csv"

echo "== GPU metrics as tstriton reads them"
node scripts/gpu-metrics-check.js > "$OUT/gpu-metrics.txt"
echo "rc $?"
grep -v '^#' "$OUT/gpu-metrics.txt"

# Waits for a server's readiness, infers once over HTTP, prints its metrics' GPU and inference series.
probe() { # http-port metrics-port
  node - "$1" "$2" <<'JS'
const [http, metrics] = process.argv.slice(2);
(async () => {
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`http://127.0.0.1:${http}/v2/health/ready`)).status === 200) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i / 2) }] };
  const r = await fetch(`http://127.0.0.1:${http}/v2/models/identity_fp32/infer`, { method: 'POST', body: JSON.stringify(body) });
  console.log('infer', r.status, JSON.stringify(await r.json()).slice(0, 300));
  const config = await (await fetch(`http://127.0.0.1:${http}/v2/models/identity_fp32/config`)).json();
  console.log('instance_group', JSON.stringify(config.instance_group));
  await new Promise((r) => setTimeout(r, 2500));
  const text = await (await fetch(`http://127.0.0.1:${metrics}/metrics`)).text();
  console.log(text.split('\n').filter((l) => /^nv_(gpu|inference_request_success|inference_count|energy)/.test(l)).join('\n'));
})().catch((e) => { console.log('probe failed:', e.message); process.exitCode = 1; });
JS
}

echo "== server on the CPU, metrics port with the GPU present"
node dist/lib/cli/main.js serve "$MODEL" --http-port 18000 --grpc-port 18001 --metrics-port 18002 > "$OUT/serve-cpu.log" 2>&1 &
pid=$!
probe 18000 18002 | tee "$OUT/metrics-cpu-server.txt"
kill -TERM "$pid"; wait "$pid"; echo "server exit $?"

echo "== ONNX model on gpu:0"
node dist/lib/cli/main.js serve "$MODEL" --device gpu:0 --http-port 18010 --grpc-port 18011 --metrics-port 18012 > "$OUT/serve-gpu.log" 2>&1 &
pid=$!
probe 18010 18012 | tee "$OUT/metrics-gpu-server.txt"
kill -TERM "$pid" 2>/dev/null; wait "$pid"; echo "server exit $?"
grep -iE "cuda|gpu|error" "$OUT/serve-gpu.log" | head -20
