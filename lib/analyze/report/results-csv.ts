import type { AnalyzeRun, CandidateResult, MeasuredStep } from '../analyze-types';
import { candidateChanges } from '../candidate';
import { latencyAt, type Objective } from '../objective';

const MIB = 1024 * 1024;

/** The columns a candidate and its chosen step are described by, in results.csv and steps.csv. */
const CANDIDATE_COLUMNS = ['model', 'config', 'as_bound', 'max_batch_size', 'max_queue_delay_us', 'instance_count', 'instance_kind', 'http_thread_count'];
const STEP_COLUMNS = (p: string) => ['concurrency', 'throughput_infer_per_s', `latency_${p}_us`, 'latency_p50_us', 'latency_p99_us', 'server_cpu_percent', 'server_rss_mib', 'load_cpu_percent', 'stable'];

/** A cell of CSV: quoted when it holds a comma, a quote or a line break. */
function cell(value: string | number | boolean | undefined): string {
  const text = value === undefined || (typeof value === 'number' && !Number.isFinite(value)) ? '' : typeof value === 'number' ? String(Math.round(value * 100) / 100) : String(value);
  return /[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function candidateCells(model: string, r: CandidateResult, base: CandidateResult['candidate']): (string | number | boolean)[] {
  const c = r.candidate;
  return [model, candidateChanges(c, base), r.isDefault, c.maxBatchSize, c.maxQueueDelayMicroseconds, c.instanceCount, c.kind, c.httpThreadCount];
}

function stepCells(s: MeasuredStep | undefined, objective: Objective): (string | number | boolean | undefined)[] {
  if (!s) return STEP_COLUMNS('').map(() => undefined);
  const load = s.step.load;
  return [
    load.kind === 'concurrency' ? load.concurrency : undefined,
    s.step.throughput,
    latencyAt(s.step, objective.percentile),
    s.step.latencyUs.p50,
    s.step.latencyUs.p99,
    s.cpuPercent,
    s.rssBytes === undefined ? undefined : s.rssBytes / MIB,
    s.loadCpuPercent,
    s.step.stable,
  ];
}

/**
 * results.csv: one row per candidate measured, in the order measured, with its best step under the objective (empty
 * when none met it), whether it met the objective, how many steps were measured and the error that stopped it.
 */
export function resultsCsv(run: AnalyzeRun): string {
  const { objective } = run.options;
  const header = [...CANDIDATE_COLUMNS, ...STEP_COLUMNS(objective.percentile), 'meets_objective', 'steps_measured', 'error'];
  const rows = run.models.flatMap((m) => m.results.map((r) => [...candidateCells(m.model, r, m.base), ...stepCells(r.steps[r.best], objective), r.best >= 0, r.steps.length, r.error]));
  return [header, ...rows].map((row) => row.map(cell).join(',')).join('\n') + '\n';
}

/** steps.csv: one row per step of every candidate's concurrency sweep. */
export function stepsCsv(run: AnalyzeRun): string {
  const { objective } = run.options;
  const header = [...CANDIDATE_COLUMNS, ...STEP_COLUMNS(objective.percentile)];
  const rows = run.models.flatMap((m) => m.results.flatMap((r) => r.steps.map((s) => [...candidateCells(m.model, r, m.base), ...stepCells(s, objective)])));
  return [header, ...rows].map((row) => row.map(cell).join(',')).join('\n') + '\n';
}
