import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { PerfOptions, PerfReport, PerfStep } from '../perf/perf-types';
import type { MeasureFn } from './analyze-types';

/**
 * A `MeasureFn` that runs Triton's `perf_analyzer` (from `PATH`, or `binary`) for each load of the sweep and reads
 * its CSV: the measurement of Triton's own tool, for `--measure-with perf_analyzer`. perf_analyzer reports no
 * request or error counts in its CSV: the requests are derived from the throughput and the window, and a step whose
 * run fails is a step with no request.
 */
export function perfAnalyzerMeasure(binary = 'perf_analyzer'): MeasureFn {
  return async (options) => {
    const steps: PerfStep[] = [];
    for (const load of options.loads) {
      if (options.signal?.aborted) break;
      if (load.kind !== 'concurrency') throw new Error('perf_analyzer is driven here at a concurrency only');
      steps.push(await runOnce(binary, options, load.concurrency));
    }
    return { target: options.target, batchSize: options.batchSize ?? 1, steps };
  };
}

/** One perf_analyzer run at one concurrency. */
async function runOnce(binary: string, options: PerfOptions, concurrency: number): Promise<PerfStep> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tstriton-pa-'));
  const csv = path.join(dir, 'out.csv');
  const windowMs = options.measurementIntervalMs ?? 5000;
  const args = [
    '-m', options.target.model,
    '-u', options.target.url,
    '-i', options.target.protocol,
    '-b', String(options.batchSize ?? 1),
    '--concurrency-range', `${concurrency}:${concurrency}`,
    // Asynchronous calls, as tstriton perf makes: without it perf_analyzer waits on a thread per request in flight.
    '--async',
    '--measurement-interval', String(windowMs),
    '--max-trials', String(options.maxTrials ?? 10),
    '--stability-percentage', String(options.stabilityPercentage ?? 10),
    ...(options.percentile !== undefined ? ['--percentile', String(options.percentile)] : []),
    ...Object.entries(options.shapes ?? {}).flatMap(([name, dims]) => ['--shape', `${name}:${dims.join(',')}`]),
    ...(options.inputData ? ['--input-data', typeof options.inputData === 'string' ? options.inputData : options.inputData.file] : []),
    '-f', csv, '--verbose-csv',
  ];
  const load = { kind: 'concurrency' as const, concurrency };
  try {
    const failed = await new Promise<string | undefined>((resolve) => {
      execFile(binary, args, { signal: options.signal, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => resolve(err ? whyFailed(err, `${stdout}\n${stderr}`) : undefined));
    });
    const row = failed === undefined ? readRow(csv) : undefined;
    if (!row) {
      const firstError = failed ?? 'perf_analyzer wrote no measurement to its CSV';
      return { load, throughput: 0, requests: 0, errors: 0, latencyUs: emptyLatency(), stable: false, windowMs, firstError };
    }
    const get = (name: string) => Number(row[name] ?? NaN);
    const throughput = get('Inferences/Second');
    const p50 = get('p50 latency');
    return {
      load,
      throughput,
      requests: Math.round((throughput * windowMs) / 1000 / (options.batchSize ?? 1)),
      errors: 0,
      latencyUs: { avg: Number.isFinite(get('Avg latency')) ? get('Avg latency') : p50, min: NaN, max: NaN, p50, p90: get('p90 latency'), p95: get('p95 latency'), p99: get('p99 latency'), std: NaN },
      stable: true,
      windowMs,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Why a perf_analyzer run failed, in its own words: the line that says it could not get a stable measurement, else
 * its last line of output (`error: failed to get model metadata: ...`), after how it ended.
 */
export function whyFailed(err: Error & { code?: unknown; signal?: unknown }, output: string): string {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  const unstable = lines.find((l) => l.startsWith('Failed to obtain stable measurement within'));
  const how = typeof err.code === 'number' ? `exited with ${err.code}` : err.signal ? `ended by ${String(err.signal)}` : `did not run (${err.message})`;
  const said = unstable ?? lines[lines.length - 1];
  return `perf_analyzer ${how}${said ? `: ${said}` : ''}`;
}

/** The first data row of perf_analyzer's CSV, by column. */
function readRow(file: string): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const [header, first] = text.split(/\r?\n/);
  if (!header || !first) return undefined;
  const names = header.split(',');
  const cells = first.split(',');
  return Object.fromEntries(names.map((n, i) => [n.trim(), cells[i] ?? '']));
}

function emptyLatency(): PerfReport['steps'][number]['latencyUs'] {
  return { avg: NaN, min: NaN, max: NaN, p50: NaN, p90: NaN, p95: NaN, p99: NaN, std: NaN };
}
