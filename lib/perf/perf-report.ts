/**
 * `tstriton perf`'s output in perf_analyzer's forms: the measurement settings, each step's client and server
 * lines, the summary ("Concurrency: 8, throughput: ... infer/sec, latency ... usec"), and the `-f` CSV.
 */
import type { PerfLoad, PerfOptions, PerfReport, PerfStep } from './perf-types';
import { PERF_DEFAULTS } from './perf-defaults';
import { stepLatency } from './perf-window';

const round = (us: number): string => String(Math.round(us));
const rate = (n: number): string => n.toFixed(2);

/** The settings block perf_analyzer prints before measuring. */
export function settingsText(options: PerfOptions): string {
  const stabilizing = options.percentile === undefined ? 'average latency' : `p${options.percentile} latency`;
  const lines = [
    '*** Measurement Settings ***',
    `  Batch size: ${options.batchSize ?? 1}`,
    '  Service Kind: TRITON',
    '  Using "time_windows" mode for stabilization',
    `  Stabilizing using ${stabilizing} and throughput`,
    `  Measurement window: ${options.measurementIntervalMs ?? PERF_DEFAULTS.measurementIntervalMs} msec`,
  ];
  const first = options.loads[0];
  if (first?.kind === 'request-rate') lines.push(`  Using ${first.distribution === 'poisson' ? 'poisson' : 'uniform'} distribution on request generation`);
  else lines.push(`  Concurrency limit: ${Math.max(...options.loads.map((l) => (l.kind === 'concurrency' ? l.concurrency : 0)))} concurrent requests`);
  lines.push('  Using asynchronous calls for inference');
  return `${lines.join('\n')}\n`;
}

/** The heading of a step, as perf_analyzer prints it before measuring the step. */
export function loadHeading(load: PerfLoad): string {
  return load.kind === 'concurrency' ? `Request concurrency: ${load.concurrency}` : `Request Rate: ${load.requestRate} inference requests per seconds`;
}

/** The client and server lines of a measured step. */
export function stepText(step: PerfStep, protocol: 'http' | 'grpc', percentile: number | undefined): string {
  const l = step.latencyUs;
  const send = step.clientSendUs ?? 0;
  const lines = ['  Client: ', `    Request count: ${step.requests}`, `    Throughput: ${rate(step.throughput)} infer/sec`];
  if (percentile === undefined) lines.push(`    Avg latency: ${round(l.avg)} usec (standard deviation ${round(l.std)} usec)`);
  lines.push(`    p50 latency: ${round(l.p50)} usec`, `    p90 latency: ${round(l.p90)} usec`, `    p95 latency: ${round(l.p95)} usec`, `    p99 latency: ${round(l.p99)} usec`);
  if (percentile !== undefined && ![50, 90, 95, 99].includes(percentile)) lines.push(`    p${percentile} latency: ${round(step.percentileUs ?? 0)} usec`);
  lines.push(
    protocol === 'grpc'
      ? `    Avg gRPC time: ${round(l.avg)} usec ((un)marshal request/response ${round(send)} usec + response wait ${round(l.avg - send)} usec)`
      : `    Avg HTTP time: ${round(l.avg)} usec (send/recv ${round(send)} usec + response wait ${round(l.avg - send)} usec)`,
  );
  if (step.errors > 0) lines.push(`    Errors: ${step.errors} (first: ${step.firstError ?? 'unknown'})`);
  const s = step.server;
  if (s) {
    lines.push(
      '  Server: ',
      `    Inference count: ${s.inferenceCount}`,
      `    Execution count: ${s.executionCount}`,
      `    Successful request count: ${s.successCount}`,
      `    Avg request latency: ${round(s.requestUs ?? 0)} usec (overhead ${round(s.overheadUs ?? 0)} usec + queue ${round(s.queueUs)} usec + compute input ${round(s.computeInputUs)} usec + compute infer ${round(s.computeInferUs)} usec + compute output ${round(s.computeOutputUs)} usec)`,
    );
  }
  if (step.delayedRequests !== undefined) {
    const share = ((100 * step.delayedRequests) / Math.max(1, step.requests + step.errors)).toFixed(1);
    lines.push(`  Warning: ${step.delayedRequests} requests (${share} %) were sent later than due: every sequence had one in flight (see --num-of-sequences)`);
  }
  if (!step.stable) lines.push('  Warning: the last 3 windows did not agree within the stability percentage (see --measurement-interval, --max-trials)');
  return `${lines.join('\n')}\n`;
}

/** The summary after the last step: one line per step. */
export function summaryText(report: PerfReport, percentile: number | undefined): string {
  const title = `Inferences/Second vs. Client ${percentile === undefined ? 'Average' : `p${percentile}`} Batch Latency`;
  const lines = report.steps.map((s) => `${loadLabel(s.load)}, throughput: ${rate(s.throughput)} infer/sec, latency ${round(stepLatency(s))} usec`);
  return `${title}\n${lines.join('\n')}\n`;
}

function loadLabel(load: PerfLoad): string {
  return load.kind === 'concurrency' ? `Concurrency: ${load.concurrency}` : `Request Rate: ${load.requestRate}`;
}

/**
 * perf_analyzer's CSV (`-f`): one row per step, client send, network and server, the server's queue and compute
 * times, client receive and the latency percentiles; `verbose` adds the average latency (without `--percentile`),
 * request/response and response wait.
 */
export function csvText(report: PerfReport, verbose: boolean, percentile: number | undefined): string {
  const first = report.steps[0]?.load.kind === 'request-rate' ? 'Request Rate' : 'Concurrency';
  const header = [first, 'Inferences/Second', 'Client Send', 'Network+Server Send/Recv', 'Server Queue', 'Server Compute Input', 'Server Compute Infer', 'Server Compute Output', 'Client Recv', 'p50 latency', 'p90 latency', 'p95 latency', 'p99 latency'];
  if (verbose) header.push(...(percentile === undefined ? ['Avg latency'] : []), 'request/response', 'response wait');
  const rows = report.steps.map((s) => {
    const send = s.clientSendUs ?? 0;
    const server = s.server;
    const serverUs = server ? server.queueUs + server.computeInputUs + server.computeInferUs + server.computeOutputUs : 0;
    const latency = stepLatency(s);
    const row = [
      s.load.kind === 'concurrency' ? String(s.load.concurrency) : String(s.load.requestRate),
      rate(s.throughput),
      round(send),
      round(Math.max(0, latency - send - serverUs)),
      round(server?.queueUs ?? 0),
      round(server?.computeInputUs ?? 0),
      round(server?.computeInferUs ?? 0),
      round(server?.computeOutputUs ?? 0),
      '0',
      round(s.latencyUs.p50),
      round(s.latencyUs.p90),
      round(s.latencyUs.p95),
      round(s.latencyUs.p99),
    ];
    if (verbose) row.push(...(percentile === undefined ? [round(s.latencyUs.avg)] : []), round(send), round(s.latencyUs.avg - send));
    return row.join(',');
  });
  return `${header.join(',')}\n${rows.map((r) => `${r}\n`).join('')}`;
}
