import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Triton, TritonConfigInit } from 'tstriton';
import { bindAddSub } from '../../examples/add-sub/model';
import { bindSequenceAccumulate } from '../../examples/sequence/model';
import { bindStreamTokens } from '../../examples/streaming/model';
import { runPerf } from '../../lib/perf/run-perf';
import type { PerfOptions, PerfReport } from '../../lib/perf/perf-types';
import { makeTestCertificates, type TestCertificates } from '../helpers/certificates';
import { exitingWithParent, track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// `tstriton perf` against a real tstriton server on port 0: what perf counts is held against the server's own
// statistics. Between steps perf lets every request in flight finish, so the requests a run completed in all equal
// the server's inference count over the run exactly. Within a step, the reported (last three) windows are cut by
// the client's mark and the server's statistics read a moment apart, so the two counts of the windows may differ
// by the requests that completed in that moment at either edge; perf_analyzer's counts carry the same edge.

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];

const CONFIG: TritonConfigInit = { allowGrpc: true, allowSharedMemory: true, exitTimeoutSeconds: 5 };

/** Short windows: the test checks counts, not rates. */
const MEASURE = { measurementIntervalMs: 400, maxTrials: 3 } as const;

async function readInferenceCount(httpPort: number, model: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${httpPort}/v2/models/${model}/stats`);
  const body = (await res.json()) as { model_stats: { inference_count: number }[] };
  return body.model_stats.reduce((n, s) => n + s.inference_count, 0);
}

/**
 * The server's inference count once it has settled: on front-end threads a statistics request the busy core does not
 * answer within 50 ms is answered from the counters it last published (docs/threads.md), so two reads a moment
 * apart must agree.
 */
async function inferenceCount(httpPort: number, model: string): Promise<number> {
  let last = await readInferenceCount(httpPort, model);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await readInferenceCount(httpPort, model);
    if (now === last) return now;
    last = now;
  }
}

/** Runs perf and returns its report with the server's inference count over the whole run. */
async function measured(triton: Triton, options: PerfOptions): Promise<{ report: PerfReport; serverDelta: number }> {
  const before = await inferenceCount(triton.ports.http as number, options.target.model);
  const report = await runPerf(options);
  const after = await inferenceCount(triton.ports.http as number, options.target.model);
  return { report, serverDelta: after - before };
}

/** The counts of a report against the server's: exact over the run, within the edges for the reported windows. */
function expectCountsMatch(report: PerfReport, serverDelta: number, batchSize = 1): void {
  const completed = report.steps.reduce((n, s) => n + (s.completedRequests ?? 0), 0);
  expect(completed * batchSize).toBe(serverDelta);
  for (const step of report.steps) {
    expect(step.errors).toBe(0);
    expect(step.requests).toBeGreaterThan(0);
    expect(step.requests).toBeLessThanOrEqual(step.completedRequests as number);
    expect(step.server).toBeDefined();
    const server = step.server!;
    // At each of the two edges, at most the requests of a few milliseconds fall on the other side.
    const edge = Math.max(4 * (step.load.kind === 'concurrency' ? step.load.concurrency : 1), Math.ceil(step.requests * 0.02));
    expect(Math.abs(server.inferenceCount - step.requests * batchSize)).toBeLessThanOrEqual(2 * edge);
    expect(server.successCount).toBe(server.inferenceCount / batchSize);
    expect(step.throughput).toBeGreaterThan(0);
    expect(step.latencyUs.p50).toBeGreaterThan(0);
    expect(step.latencyUs.p99).toBeGreaterThanOrEqual(step.latencyUs.p50);
  }
}

describe.each([
  ['one front-end thread', 1],
  ['two front-end threads', 2],
])('tstriton perf against a tstriton server (%s)', (_, httpThreadCount) => {
  let triton: Triton;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tstriton-perf-'));
    triton = track(loopbackTriton({ ...CONFIG, httpThreadCount }));
    bindAddSub(triton);
    bindSequenceAccumulate(triton);
    bindStreamTokens(triton);
    await triton.run();
  });

  afterAll(async () => {
    await triton?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const target = (protocol: 'http' | 'grpc', model = 'add_sub') => ({
    url: `127.0.0.1:${protocol === 'http' ? triton.ports.http : triton.ports.grpc}`,
    protocol,
    model,
  });

  it.each(['http', 'grpc'] as const)('counts over %s what the server counts, at concurrency 1 and 4', async (protocol) => {
    const { report, serverDelta } = await measured(triton, {
      target: target(protocol),
      shapes: { a: [4], b: [4] },
      loads: [
        { kind: 'concurrency', concurrency: 1 },
        { kind: 'concurrency', concurrency: 4 },
      ],
      ...MEASURE,
    });
    expect(report.steps.map((s) => s.load)).toEqual([
      { kind: 'concurrency', concurrency: 1 },
      { kind: 'concurrency', concurrency: 4 },
    ]);
    expectCountsMatch(report, serverDelta);
  });

  it('counts batches of 4 as 4 inferences each, with JSON tensors over HTTP', async () => {
    const { report, serverDelta } = await measured(triton, {
      target: target('http'),
      batchSize: 4,
      inputTensorFormat: 'json',
      outputTensorFormat: 'json',
      loads: [{ kind: 'concurrency', concurrency: 2 }],
      ...MEASURE,
    });
    expectCountsMatch(report, serverDelta, 4);
  });

  it('streams over gRPC ModelStreamInfer', async () => {
    const { report, serverDelta } = await measured(triton, { target: target('grpc'), streaming: true, loads: [{ kind: 'concurrency', concurrency: 2 }], ...MEASURE });
    expectCountsMatch(report, serverDelta);
  });

  it('streams to a decoupled model, a request done at its final response', async () => {
    const data = join(dir, 'prompts.json');
    writeFileSync(data, JSON.stringify({ data: [{ PROMPT: ['one two three'] }, { PROMPT: ['four five'] }] }));
    const { report, serverDelta } = await measured(triton, { target: target('grpc', 'stream_tokens'), streaming: true, inputData: { file: data }, loads: [{ kind: 'concurrency', concurrency: 2 }], ...MEASURE });
    expectCountsMatch(report, serverDelta);
    // The model waits 20 ms before each word (examples/streaming/model.ts): a request of two or three words ends
    // about 40 ms or more after it starts, where one counted done at its first response would end after 20. A
    // Node timer counts from its loop's cached time, so each wait may end up to a millisecond early by the client's
    // clock (39.96 ms was seen with both cores busy): two waits, less that millisecond each.
    expect(report.steps[0]!.latencyUs.min).toBeGreaterThanOrEqual(38_000);
  });

  it('refuses a decoupled model without --streaming', async () => {
    await expect(runPerf({ target: target('http', 'stream_tokens'), loads: [{ kind: 'concurrency', concurrency: 1 }], ...MEASURE })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: "model 'stream_tokens' is decoupled (any number of responses per request): measure it with -i grpc --streaming",
    });
  });

  it('runs an open loop at a request rate, constant and Poisson', async () => {
    const { report, serverDelta } = await measured(triton, {
      target: target('http'),
      loads: [
        { kind: 'request-rate', requestRate: 200, distribution: 'constant' },
        { kind: 'request-rate', requestRate: 200, distribution: 'poisson' },
      ],
      ...MEASURE,
    });
    expectCountsMatch(report, serverDelta);
  });

  it.each(['http', 'grpc'] as const)('reads inputs from registered system shared memory over %s, and unregisters it after', async (protocol) => {
    const { report, serverDelta } = await measured(triton, { target: target(protocol), sharedMemory: 'system', batchSize: 2, shapes: { a: [3], b: [3] }, loads: [{ kind: 'concurrency', concurrency: 2 }], ...MEASURE });
    expectCountsMatch(report, serverDelta, 2);
    const regions = await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/systemsharedmemory/status`)).json();
    expect(regions).toEqual([]);
    expect(readdirSync('/dev/shm').filter((f) => f.startsWith(`tstriton-perf-${process.pid}-`))).toEqual([]);
  });

  it.each(['http', 'grpc'] as const)('has the outputs written into registered system shared memory over %s, a region each of --output-shared-memory-size bytes where the shape is variable', async (protocol) => {
    const dir = mkdtempSync(join(tmpdir(), 'tstriton-perf-shm-'));
    try {
      const data = join(dir, 'data.json');
      writeFileSync(data, JSON.stringify({ data: [{ a: [1, 2, 3], b: [10, 20, 30] }] }));
      // What each output's region holds once a step has been measured (the regions go when the run ends).
      const seen: Record<string, { bytes: number; values: number[] }> = {};
      const read = (k: number) => {
        const bytes = readFileSync(`/dev/shm/tstriton-perf-${process.pid}-out-${k}`);
        return { bytes: bytes.byteLength, values: Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, 6)) };
      };
      const options: PerfOptions = {
        target: target(protocol),
        sharedMemory: 'system',
        outputSharedMemorySize: 4096,
        inputData: { file: data },
        batchSize: 2,
        shapes: { a: [3], b: [3] },
        loads: [{ kind: 'concurrency', concurrency: 2 }],
        ...MEASURE,
      };
      const before = await inferenceCount(triton.ports.http as number, 'add_sub');
      const report = await runPerf(options, (p) => {
        if (p.step) Object.assign(seen, { add: read(0), sub: read(1) });
      });
      expectCountsMatch(report, (await inferenceCount(triton.ports.http as number, 'add_sub')) - before, 2);
      // add_sub's outputs are [-1]: their size is not fixed, so each region has the size asked for.
      expect(seen).toEqual({ add: { bytes: 4096, values: [11, 22, 33, 11, 22, 33] }, sub: { bytes: 4096, values: [-9, -18, -27, -9, -18, -27] } });
      expect(readdirSync('/dev/shm').filter((f) => f.startsWith(`tstriton-perf-${process.pid}-`))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(['http', 'grpc'] as const)('runs an open loop over a sequence model\'s sequences in order over %s', async (protocol) => {
    // Out of order, a sequence's later request would reach the server before its start and fail.
    const { report, serverDelta } = await measured(triton, {
      target: target(protocol, 'sequence_accumulate'),
      sequenceLength: 5,
      numOfSequences: 6,
      loads: [{ kind: 'request-rate', requestRate: 300, distribution: 'poisson' }],
      ...MEASURE,
    });
    expectCountsMatch(report, serverDelta);
  });

  it('holds a request due while every sequence has one in flight, and counts it as delayed', async () => {
    // One sequence at 5,000 requests/s: a request is due every 200 µs, sooner than a round trip on this machine.
    const { report, serverDelta } = await measured(triton, {
      target: target('http', 'sequence_accumulate'),
      sequenceLength: 5,
      numOfSequences: 1,
      loads: [{ kind: 'request-rate', requestRate: 5000, distribution: 'constant' }],
      ...MEASURE,
    });
    expectCountsMatch(report, serverDelta);
    const step = report.steps[0]!;
    expect(step.delayedRequests).toBeGreaterThan(0);
    expect(step.delayedRequests).toBeLessThanOrEqual(step.completedRequests as number);
  });

  it('sends sequences with sequence id, start and end to a sequence model', async () => {
    const { report, serverDelta } = await measured(triton, { target: target('grpc', 'sequence_accumulate'), sequenceLength: 5, loads: [{ kind: 'concurrency', concurrency: 3 }], ...MEASURE });
    expectCountsMatch(report, serverDelta);
  });
});

describe('tstriton perf over mutual TLS (HTTPS and gRPC)', () => {
  let triton: Triton;
  let certificates: TestCertificates;

  beforeAll(async () => {
    certificates = makeTestCertificates('perf-tls');
    const { server, ca } = certificates.files;
    triton = track(
      loopbackTriton({
        ...CONFIG,
        httpUseSsl: true,
        httpUseSslMutual: true,
        httpServerCert: server.cert,
        httpServerKey: server.key,
        httpRootCert: ca.cert,
        grpcUseSsl: true,
        grpcUseSslMutual: true,
        grpcServerCert: server.cert,
        grpcServerKey: server.key,
        grpcRootCert: ca.cert,
      }),
    );
    bindAddSub(triton);
    await triton.run();
  });

  afterAll(async () => {
    await triton?.stop();
    certificates?.remove();
  });

  it.each(['http', 'grpc'] as const)('measures over %s with the CA and a client certificate', async (protocol) => {
    const { ca, client } = certificates.files;
    const tls = { ca: readFileSync(ca.cert, 'utf8'), cert: readFileSync(client.cert, 'utf8'), key: readFileSync(client.key, 'utf8') };
    const port = protocol === 'http' ? triton.ports.http : triton.ports.grpc;
    const report = await runPerf({ target: { url: `127.0.0.1:${port}`, protocol, model: 'add_sub', tls }, loads: [{ kind: 'concurrency', concurrency: 2 }], ...MEASURE });
    const step = report.steps[0]!;
    expect(step.errors).toBe(0);
    expect(step.requests).toBeGreaterThan(0);
    expect(step.server?.inferenceCount).toBeGreaterThan(0);
  });

  it('trusts a server certificate it cannot check with --ssl-https-verify-peer 0 (verifyPeer: false)', async () => {
    const { client } = certificates.files;
    const tls = { cert: readFileSync(client.cert, 'utf8'), key: readFileSync(client.key, 'utf8'), verifyPeer: false };
    const report = await runPerf({ target: { url: `127.0.0.1:${triton.ports.http}`, protocol: 'http', model: 'add_sub', tls }, loads: [{ kind: 'concurrency', concurrency: 1 }], ...MEASURE });
    expect(report.steps[0]?.errors).toBe(0);
    expect(report.steps[0]?.requests).toBeGreaterThan(0);
  });

  it('cannot start without a client certificate, and says so', async () => {
    const tls = { ca: readFileSync(certificates.files.ca.cert, 'utf8') };
    await expect(runPerf({ target: { url: `127.0.0.1:${triton.ports.http}`, protocol: 'http', model: 'add_sub', tls }, loads: [{ kind: 'concurrency', concurrency: 1 }], ...MEASURE })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(/^cannot reach the server at 127\.0\.0\.1:\d+ \(http\): /),
    });
  });
});

describe('the tstriton perf command line', () => {
  let triton: Triton;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tstriton-perf-'));
    triton = track(loopbackTriton(CONFIG));
    bindAddSub(triton);
    await triton.run();
  });

  afterAll(async () => {
    await triton?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = execFile(process.execPath, [...CLI, 'perf', ...args], { cwd: ROOT, env: exitingWithParent({ ...process.env }) }, (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
      });
      track(child);
    });
  }

  it("prints perf_analyzer's report and writes its CSV and the JSON report", async () => {
    const csv = join(dir, 'report.csv');
    const json = join(dir, 'report.json');
    const before = await inferenceCount(triton.ports.http as number, 'add_sub');
    const run = await runCli(['-m', 'add_sub', '-u', `127.0.0.1:${triton.ports.http}`, '--shape', 'a:4', '--shape', 'b:4', '--concurrency-range', '1:3:2', '-p', '400', '-r', '3', '-f', csv, '--json', json]);
    const after = await inferenceCount(triton.ports.http as number, 'add_sub');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('Request concurrency: 1\n  Client: \n    Request count: ');
    expect(run.stdout).toMatch(/\n {2}Server: \n {4}Inference count: \d+\n {4}Execution count: \d+\n {4}Successful request count: \d+\n {4}Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)/);
    expect(run.stdout).toMatch(/Inferences\/Second vs. Client Average Batch Latency\nConcurrency: 1, throughput: [\d.]+ infer\/sec, latency \d+ usec\nConcurrency: 3, throughput: [\d.]+ infer\/sec, latency \d+ usec\n$/);
    const lines = readFileSync(csv, 'utf8').trimEnd().split('\n');
    expect(lines[0]).toBe(
      'Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency',
    );
    expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(['1', '3']);
    const report = JSON.parse(readFileSync(json, 'utf8')) as PerfReport;
    expectCountsMatch(report, after - before);
  });

  it.each([
    ['an unknown model', (http: number) => ['-m', 'no_such_model', '-u', `127.0.0.1:${http}`], /^tstriton: model 'no_such_model' is not available at 127\.0\.0\.1:\d+: .+\n$/],
    ['an unreachable server', () => ['-m', 'add_sub', '-u', '127.0.0.1:1'], /^tstriton: cannot reach the server at 127\.0\.0\.1:1 \(http\): .+\n$/],
    ['a shape that does not fit the model', (http: number) => ['-m', 'add_sub', '-u', `127.0.0.1:${http}`, '--shape', 'a:4,4'], /^tstriton: --shape a:4,4 has 2 dimensions; input 'a' has 1: \[-1\] \(without the batch dimension\)\n$/],
    ['a bad flag value', (http: number) => ['-m', 'add_sub', '-u', `127.0.0.1:${http}`, '--concurrency-range', '8:1'], /^tstriton: --concurrency-range 8:1: the end is below the start\n$/],
    ['an unknown flag', (http: number) => ['-m', 'add_sub', '-u', `127.0.0.1:${http}`, '--bogus'], /^tstriton: unknown flag --bogus \(see tstriton perf --help\)\n$/],
  ])('refuses %s with one line and exit code 2', async (_, args, message) => {
    const run = await runCli(args(triton.ports.http as number));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });
});
