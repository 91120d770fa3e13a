import { spawn } from 'node:child_process';
import { DEFAULT_CONCURRENCY, parseAnalyzeArgs } from '../../../lib/analyze/analyze-flags';
import { confirmConcurrencies } from '../../../lib/analyze/analyze';
import type { CandidateResult, LoadSettings, MeasureFn } from '../../../lib/analyze/analyze-types';
import type { CandidateServer } from '../../../lib/analyze/candidate-server';
import { measureCandidate } from '../../../lib/analyze/measure-candidate';
import type { Objective } from '../../../lib/analyze/objective';
import { parseProcessSample, sampleLoadGenerator, sampleProcess } from '../../../lib/analyze/process-usage';
import { machineBoundText } from '../../../lib/analyze/report/report-markdown';
import type { PerfOptions, PerfReport } from '../../../lib/perf/perf-types';

/**
 * The sweep's rules, over a server described by a formula: one that batches up to `batch` rows per execution of
 * `execMs` on `instances` instances. Each execution then serves min(concurrency, batch) requests, so throughput grows
 * with concurrency until the batches are full and the instances busy; past that, latency grows and throughput does not.
 */
function batchingServer(batch: number, execMs: number, instances: number): { measure: MeasureFn; asked: PerfOptions[] } {
  const asked: PerfOptions[] = [];
  const measure = (async (options: PerfOptions): Promise<PerfReport> => {
    asked.push(options);
    const load = options.loads[0];
    if (load?.kind !== 'concurrency') throw new Error('a concurrency step was expected');
    const c = load.concurrency;
    const perExecution = Math.min(batch, Math.ceil(c / instances));
    const throughput = (instances * perExecution * 1000) / execMs;
    const us = (c / throughput) * 1e6;
    return {
      target: options.target,
      batchSize: 1,
      steps: [{ load, throughput, requests: Math.round(throughput), errors: 0, latencyUs: { avg: us, min: us, max: us, p50: us, p90: us, p95: us, p99: us, std: 0 }, stable: true, windowMs: 1000 }],
    };
  }) as MeasureFn;
  return { measure, asked };
}

// The sweep samples this process's CPU and memory as if it were the server.
const server: CandidateServer = { pid: process.pid, httpPort: 8000, grpcPort: 8001, models: ['m'], stop: async () => undefined };
const load: LoadSettings = { protocol: 'http', batchSize: 1, concurrency: DEFAULT_CONCURRENCY, measurementIntervalMs: 1000, maxTrials: 3, stabilityPercentage: 10, warmupMs: 500 };
const concurrencies = (asked: PerfOptions[]) => asked.map((o) => (o.loads[0]?.kind === 'concurrency' ? o.loads[0].concurrency : NaN));

describe('measureCandidate', () => {
  it('sweeps powers of two up to 1024 by default, as Model Analyzer', () => {
    expect(DEFAULT_CONCURRENCY).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
    const line = parseAnalyzeArgs(['--model-repository', '/tmp', '--model', 'm'], '/tmp');
    expect(line.options.load.concurrency).toEqual(DEFAULT_CONCURRENCY);
    expect(parseAnalyzeArgs(['--model-repository', '/tmp', '--model', 'm', '--concurrency', '1,8'], '/tmp').options.load.concurrency).toEqual([1, 8]);
  });

  it("gives perf_analyzer its own default of 10 windows a step, which --max-trials overrides", () => {
    const trials = (...flags: string[]) => parseAnalyzeArgs(['--model-repository', '/tmp', '--model', 'm', ...flags], '/tmp').options.load.maxTrials;
    expect(trials()).toBe(3);
    expect(trials('--measure-with', 'perf_analyzer')).toBe(10);
    expect(trials('--measure-with', 'perf_analyzer', '--max-trials', '4')).toBe(4);
  });

  it('goes past 64 in flight while larger batches still raise throughput within the budget', async () => {
    // Batches of up to 128 rows, 20 ms each, on 2 instances: full at 256 in flight, 12,800 infer/s.
    const { measure, asked } = batchingServer(128, 20, 2);
    const objective: Objective = { percentile: 'p95', latencyBudgetUs: 50_000 };
    const steps = await measureCandidate(server, 'm', load, objective, measure, new AbortController().signal, () => undefined);
    // The warm-up loads 128 in flight (enough for the largest batch searched), not the sweep's top of 1024.
    expect(concurrencies(asked)[0]).toBe(128);
    const swept = steps.map((s) => (s.step.load.kind === 'concurrency' ? s.step.load.concurrency : NaN));
    // 256 in flight: 20 ms, within the budget and the most throughput; 512: 40 ms, no more throughput; 1024: 80 ms,
    // past the budget, where the sweep stops (two steps without growth would have stopped it there too).
    expect(swept).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]);
    const within = steps.filter((s) => s.step.latencyUs.p95 <= 50_000).map((s) => s.step.throughput);
    expect(Math.max(...within)).toBeCloseTo(12_800);
    expect(steps[6]?.step.throughput).toBeCloseTo(3_200); // what a sweep that ended at 64 would have reported
  });

  it('stops two steps after throughput stops growing', async () => {
    // Batches of up to 4 rows, 2 ms each, one instance: full at 4 in flight.
    const { measure, asked } = batchingServer(4, 2, 1);
    const steps = await measureCandidate(server, 'm', load, { percentile: 'p95' }, measure, new AbortController().signal, () => undefined);
    expect(steps.map((s) => s.step.throughput)).toEqual([500, 1000, 2000, 2000, 2000]);
    expect(concurrencies(asked)).toEqual([128, 1, 2, 4, 8, 16]);
  });

  it('stops at the first step past the latency budget', async () => {
    const { measure } = batchingServer(4, 2, 1);
    const steps = await measureCandidate(server, 'm', load, { percentile: 'p95', latencyBudgetUs: 3_000 }, measure, new AbortController().signal, () => undefined);
    // 8 in flight wait 4 ms: past the 3 ms budget.
    expect(steps.map((s) => s.step.latencyUs.p95)).toEqual([2_000, 2_000, 2_000, 4_000]);
  });
});

describe('confirmConcurrencies', () => {
  const candidate = { maxBatchSize: 128, maxQueueDelayMicroseconds: 0, instanceCount: 2, kind: 'cpu', httpThreadCount: 1 };
  const resultAt = (best: number, ...swept: number[]): CandidateResult => ({
    candidate,
    isDefault: false,
    best,
    durationMs: 0,
    steps: swept.map((concurrency) => ({
      step: { load: { kind: 'concurrency', concurrency }, throughput: 1, requests: 1, errors: 0, latencyUs: { avg: 1, min: 1, max: 1, p50: 1, p90: 1, p95: 1, p99: 1, std: 0 }, stable: true, windowMs: 1 },
    })),
  });

  it('measures a config again at its best step and the sweep\'s step below it', () => {
    expect(confirmConcurrencies(resultAt(8, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512), DEFAULT_CONCURRENCY)).toEqual([128, 256]);
    expect(confirmConcurrencies(resultAt(5, 1, 2, 4, 8, 16, 32, 64), DEFAULT_CONCURRENCY)).toEqual([16, 32]);
  });

  it('has nothing below the sweep\'s start, and follows a sweep the user gave', () => {
    expect(confirmConcurrencies(resultAt(0, 1, 2), DEFAULT_CONCURRENCY)).toEqual([1]);
    expect(confirmConcurrencies(resultAt(1, 3, 12, 48), [3, 12, 48])).toEqual([3, 12]);
  });
});

describe("the load generator's CPU", () => {
  it('counts this process and the children it reaped: tstriton perf runs here, perf_analyzer as a child that exits', async () => {
    // Work measured in CPU time, not in wall time, so that a busy machine does not make it less.
    const burn = 'const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; const end = cpu() + 400; while (cpu() < end);';
    const before = sampleLoadGenerator();
    // A child that uses 400 ms of CPU and exits (a perf_analyzer step), then 200 ms of this process's own.
    await new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ['-e', burn]);
      child.on('error', reject);
      child.on('exit', () => resolve());
    });
    const afterChild = sampleLoadGenerator();
    const own = sampleProcess('self');
    const cpuMs = () => {
      const usage = process.cpuUsage();
      return (usage.user + usage.system) / 1000;
    };
    const end = cpuMs() + 200;
    while (cpuMs() < end);
    const afterOwn = sampleProcess('self');
    expect(before && afterChild && own && afterOwn).toBeTruthy();
    // The child's 400 ms (less one 10 ms clock tick at each end) counts; without the children it would not.
    expect(afterChild!.cpuSeconds - before!.cpuSeconds).toBeGreaterThanOrEqual(0.38);
    expect(afterOwn!.cpuSeconds - own!.cpuSeconds).toBeGreaterThanOrEqual(0.18);
  });

  it('reads cutime and cstime only when asked', () => {
    const stat = '42 (node) S 1 42 42 0 -1 4194560 100 0 0 0 100 50 30 20 20 0 11 0 100 1000 200';
    expect(parseProcessSample(stat, 'VmRSS:\t1024 kB\n', 0)?.cpuSeconds).toBe(1.5);
    expect(parseProcessSample(stat, 'VmRSS:\t1024 kB\n', 0, true)?.cpuSeconds).toBe(2);
  });

  it('is measured beside the server at each step of the sweep', async () => {
    const { measure } = batchingServer(8, 5, 1);
    const steps = await measureCandidate(server, 'm', { ...load, concurrency: [1, 2], warmupMs: 0 }, { percentile: 'p95', latencyBudgetUs: 50_000 }, measure, new AbortController().signal, () => undefined);
    expect(steps).toHaveLength(2);
    for (const s of steps) expect(s.loadCpuPercent).toBeGreaterThanOrEqual(0);
  });

  it('says when the server and the load generator used nearly all the cores at the best step', () => {
    const result = (cpuPercent: number, loadCpuPercent?: number): CandidateResult => {
      const us = 1000;
      const step = { load: { kind: 'concurrency' as const, concurrency: 32 }, throughput: 4000, requests: 4000, errors: 0, latencyUs: { avg: us, min: us, max: us, p50: us, p90: us, p95: us, p99: us, std: 0 }, stable: true, windowMs: 1000 };
      const candidate = { maxBatchSize: 16, maxQueueDelayMicroseconds: 0, instanceCount: 2, kind: 'cpu', httpThreadCount: 1 };
      return { candidate, isDefault: false, steps: [{ step, cpuPercent, ...(loadCpuPercent !== undefined && { loadCpuPercent }) }], best: 0, durationMs: 1 } as CandidateResult;
    };
    expect(machineBoundText(result(156, 35), 2)).toBe(
      "At its best step the server used 156 % and the load generator 35.0 % of one core: 191 % of the 200 % that this machine's 2 cores have. The machine's CPU bounds this measurement: with more cores, or with the load generator on another machine, more instances or front-end threads may gain more than measured here.",
    );
    expect(machineBoundText(result(156, 35), 16)).toBeUndefined();
    expect(machineBoundText(result(120, 40), 2)).toBeUndefined();
    expect(machineBoundText(result(190), 2)).toBeUndefined();
  });
});
