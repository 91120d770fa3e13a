import * as path from 'node:path';
import { bestResult, compareResults } from '../analyze';
import type { AnalyzeRun, CandidateResult, ModelAnalysis } from '../analyze-types';
import { candidateChanges } from '../candidate';
import { latencyAt, paretoFront, type Objective } from '../objective';

const MIB = 1024 * 1024;

/** The objective in words: `the most throughput with p95 latency within 5 ms`. */
export function objectiveText(objective: Objective): string {
  const budget = objective.latencyBudgetUs !== undefined ? `${objective.percentile} latency within ${objective.latencyBudgetUs / 1000} ms` : undefined;
  const floor = objective.minThroughput !== undefined ? `at least ${objective.minThroughput} infer/s` : undefined;
  if (objective.minThroughput !== undefined && budget === undefined) return `the least ${objective.percentile} latency serving ${floor}`;
  const constraints = [budget, floor].filter((c) => c !== undefined);
  return `the most throughput${constraints.length > 0 ? ` with ${constraints.join(' and ')}` : ''}`;
}

/** One candidate's best step in words: `4210 infer/s at concurrency 16, p95 3.1 ms`. */
export function resultText(r: CandidateResult, objective: Objective): string {
  const s = r.steps[r.best];
  if (!s) return r.error ? `not measured: ${r.error}` : 'no step meets the objective';
  const load = s.step.load;
  return `${fmt(s.step.throughput)} infer/s at concurrency ${load.kind === 'concurrency' ? load.concurrency : '?'}, ${objective.percentile} ${ms(latencyAt(s.step, objective.percentile))} ms`;
}

/** How the run ended, in words. */
function endText(run: AnalyzeRun): string {
  if (run.interrupted) return 'interrupted (SIGINT): the report holds what was measured before';
  if (run.outOfTime) return 'the time budget ran out before the search was done';
  return 'the search was done within the time budget';
}

/**
 * report.md: the run (objective, search, load, how it ended), then per model the best config against the model as
 * bound, every candidate measured (best first), the Pareto front of all steps, the plots and the files written.
 * `plots` maps each model to its SVG files, relative to the report; a line says why when there are none.
 */
export function reportMarkdown(run: AnalyzeRun, plots: ReadonlyMap<string, readonly string[]>, plotsNote: string | undefined, measuredWith: string): string {
  const { options } = run;
  const { load, objective } = options;
  const lines = [
    '# tstriton analyze',
    '',
    `- Objective: ${objectiveText(objective)}.`,
    `- Served: ${[...options.source.modules.map((m) => `--module ${shortPath(m)}`), ...options.source.repositories.map((r) => `--model-repository ${shortPath(r)}`)].join(', ')}.`,
    `- Search: ${options.search}; time budget ${fmtDuration(options.timeBudgetMs)}, used ${fmtDuration(run.elapsedMs)}: ${endText(run)}.`,
    `- Load: ${load.protocol}, batch size ${load.batchSize}, concurrency ${load.concurrency.join(', ')} (each candidate's sweep stops where more cannot help), windows of ${load.measurementIntervalMs} ms (at most ${load.maxTrials} per step), ${load.warmupMs} ms of warm-up; measured with ${measuredWith}.`,
    `- Each candidate ran in a fresh \`tstriton serve\`; server CPU is the server process's (all its threads, percent of one core) over each step, RSS its resident memory at the end of it; load CPU is the load generator's over the step. The machine has ${run.cores} core${run.cores === 1 ? '' : 's'}, which the server and the load generator shared.`,
    '',
  ];
  for (const m of run.models) lines.push(...modelSection(m, objective, run.cores, plots.get(m.model) ?? [], plotsNote));
  return lines.join('\n');
}

function modelSection(m: ModelAnalysis, objective: Objective, cores: number, plots: readonly string[], plotsNote: string | undefined): string[] {
  const best = bestResult(m, objective);
  const asBound = m.results.find((r) => r.isDefault);
  const lines = [`## ${m.model}`, ''];
  lines.push(`As bound: ${describe(m.base)}.`, '');
  if (best && asBound) {
    const b = best.steps[best.best]?.step;
    const d = asBound.steps[asBound.best]?.step;
    lines.push(`**Best: ${candidateChanges(best.candidate, m.base)}** (${describe(best.candidate)}): ${resultText(best, objective)}.`, '');
    if (best === asBound) {
      // Where the confirmation overturned the search's best, its line says so below.
      if (!m.confirmation) lines.push('The model as bound is the best of the candidates measured.', '');
    } else if (b && d) lines.push(`Against the model as bound (${resultText(asBound, objective)}): **${(b.throughput / d.throughput).toFixed(2)}× the throughput**, ${objective.percentile} ${ms(latencyAt(b, objective.percentile))} ms against ${ms(latencyAt(d, objective.percentile))} ms.`, '');
    else lines.push(`The model as bound meets the objective at no step (${resultText(asBound, objective)}).`, '');
    if (m.confirmation) lines.push(confirmationText(m, objective), '');
    const bound = machineBoundText(best, cores);
    if (bound) lines.push(bound, '');
    lines.push(`Files: [${m.model}/config.pbtxt](${m.model}/config.pbtxt) (the best config as served), [${m.model}/bind-options.ts](${m.model}/bind-options.ts) (the same as bind() options).`, '');
  } else lines.push('No candidate met the objective: loosen it, or widen the search.', '');

  lines.push(`### Candidates (${m.results.length} measured, best first)`, '');
  lines.push(`| config | max_batch_size | queue delay (µs) | instances | threads | concurrency | infer/s | ${objective.percentile} (ms) | server CPU (%) | RSS (MiB) | load CPU (%) | meets |`);
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  const ranked = [...m.results].sort((a, b) => rank(b, objective) - rank(a, objective));
  for (const r of ranked) {
    const s = r.steps[r.best] ?? r.steps[r.steps.length - 1];
    const c = r.candidate;
    const load = s?.step.load;
    lines.push(
      `| ${r.isDefault ? 'as bound' : candidateChanges(c, m.base)} | ${c.maxBatchSize} | ${c.maxQueueDelayMicroseconds} | ${c.instanceCount}×${c.kind} | ${c.httpThreadCount} | ${load?.kind === 'concurrency' ? load.concurrency : '—'} | ${s && s.step.requests > 0 ? fmt(s.step.throughput) : '—'} | ${s && s.step.requests > 0 ? ms(latencyAt(s.step, objective.percentile)) : '—'} | ${s?.cpuPercent !== undefined ? fmt(s.cpuPercent) : '—'} | ${s?.rssBytes !== undefined ? fmt(s.rssBytes / MIB) : '—'} | ${s?.loadCpuPercent !== undefined ? fmt(s.loadCpuPercent) : '—'} | ${r.best >= 0 ? 'yes' : r.error ? `no: ${r.error.replace(/\|/g, '/')}` : 'no'} |`,
    );
  }
  lines.push('', 'Where no step met the objective, the row shows the last step measured.', '');

  const points = m.results.flatMap((r) =>
    r.steps.filter((s) => s.step.requests > 0 && s.step.errors === 0).map((s) => ({ r, s, throughput: s.step.throughput, latencyUs: latencyAt(s.step, objective.percentile) })),
  );
  lines.push('### Pareto front', '', `The steps that no other step beats on both throughput and ${objective.percentile} latency, by rising latency.`, '');
  lines.push(`| config | concurrency | infer/s | ${objective.percentile} (ms) |`, '|---|---|---|---|');
  for (const p of paretoFront(points)) {
    const load = p.s.step.load;
    lines.push(`| ${candidateChanges(p.r.candidate, m.base)} | ${load.kind === 'concurrency' ? load.concurrency : '—'} | ${fmt(p.throughput)} | ${ms(p.latencyUs)} |`);
  }
  lines.push('', '### Plots', '');
  if (plots.length > 0) for (const file of plots) lines.push(`![${file}](${file})`, '');
  else lines.push(plotsNote ?? 'No plots.', '');
  return lines;
}

/** The confirmation in words: the two measured again, the ratio (bold in markdown), and whether the gain held; empty without one. */
export function confirmationText(m: ModelAnalysis, objective: Objective, markdown = true): string {
  const c = m.confirmation;
  if (!c) return '';
  const b = c.best.steps[c.best.best]?.step;
  const d = c.asBound.steps[c.asBound.best]?.step;
  const bold = markdown ? '**' : '';
  const ratio = b && d ? `: ${bold}${(b.throughput / d.throughput).toFixed(2)}×${bold}` : '';
  const held = compareResults(c.best, c.asBound, objective) > 0;
  return [
    `Measured again back to back (windows of ${c.windowMs} ms): ${candidateChanges(c.best.candidate, m.base)}: ${resultText(c.best, objective)}; as bound: ${resultText(c.asBound, objective)}${ratio}.`,
    held ? 'The gain holds.' : "The search's best did not hold its gain: the model as bound is kept as the best.",
  ].join(' ');
}

/** The share of the machine's CPU above which a measurement counts as bound by the machine. */
const MACHINE_BOUND_SHARE = 0.85;

/**
 * When the server and the load generator together used nearly all the machine's cores at the best config's best step,
 * a line that says so: the measurement is then bound by the machine, and more cores may gain more than it shows.
 */
export function machineBoundText(best: CandidateResult, cores: number): string | undefined {
  const s = best.steps[best.best];
  if (s?.cpuPercent === undefined || s.loadCpuPercent === undefined) return undefined;
  const used = s.cpuPercent + s.loadCpuPercent;
  if (used < MACHINE_BOUND_SHARE * 100 * cores) return undefined;
  return (
    `At its best step the server used ${fmt(s.cpuPercent)} % and the load generator ${fmt(s.loadCpuPercent)} % of one core: ` +
    `${fmt(used)} % of the ${cores * 100} % that this machine's ${cores} core${cores === 1 ? '' : 's'} have. The machine's CPU bounds this measurement: ` +
    'with more cores, or with the load generator on another machine, more instances or front-end threads may gain more than measured here.'
  );
}

/** A candidate's settings in full. */
function describe(c: CandidateResult['candidate']): string {
  return `max_batch_size ${c.maxBatchSize}, queue delay ${c.maxQueueDelayMicroseconds} µs, ${c.instanceCount} instance${c.instanceCount === 1 ? '' : 's'} on ${c.kind}, ${c.httpThreadCount} front-end thread${c.httpThreadCount === 1 ? '' : 's'}`;
}

/** A sort key: those that meet the objective first, by throughput (or by least latency when that is the objective). */
function rank(r: CandidateResult, objective: Objective): number {
  const s = r.steps[r.best]?.step;
  if (!s) return -Infinity;
  const leastLatency = objective.minThroughput !== undefined && objective.latencyBudgetUs === undefined;
  return leastLatency ? -latencyAt(s, objective.percentile) : s.throughput;
}

/** A path relative to the working folder when it lies below it. */
function shortPath(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

function fmt(n: number): string {
  return n >= 100 ? String(Math.round(n)) : n.toFixed(1);
}

function ms(us: number): string {
  return (us / 1000).toFixed(2);
}

function fmtDuration(msTotal: number): string {
  const s = Math.round(msTotal / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}
