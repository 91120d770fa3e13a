import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze, bestResult } from './analyze';
import { parseAnalyzeArgs, analyzeHelp, type MeasureWith } from './analyze-flags';
import type { MeasureFn } from './analyze-types';
import { runPerf } from '../perf/run-perf';
import { perfAnalyzerMeasure } from './perf-analyzer-measure';
import { ProgressBar } from './progress-bar';
import { confirmationText, machineBoundText, resultText } from './report/report-markdown';
import { writeReport } from './report/write-report';
import { candidateChanges } from './candidate';

/** The exit code of a run stopped by SIGINT, as a shell reports one (128 + 2). */
const INTERRUPTED_EXIT_CODE = 130;

/**
 * `tstriton analyze`: parses its flags, runs the search with a progress bar on a terminal, writes the report and
 * prints where it is with the best config of each model; resolves with the exit code. SIGINT (or SIGTERM) stops the
 * search: the candidate under way ends, its server is stopped, and the report of what was measured is written.
 *
 * @throws TritonError `INVALID_CONFIG` for a bad flag, a module or repository that does not load, an unknown model
 * or bounds that leave no candidate.
 */
export async function analyzeCommand(argv: readonly string[]): Promise<number> {
  const line = parseAnalyzeArgs(argv);
  if (line.help) {
    process.stdout.write(analyzeHelp());
    return 0;
  }
  const { options, outputDir } = line;
  const measure = measureFunction(line.measureWith);
  const interrupt = new AbortController();
  const onSignal = () => {
    if (interrupt.signal.aborted) return;
    interrupt.abort(new Error('interrupted'));
    process.stderr.write('\ntstriton: interrupted: stopping the candidate under way and writing the report of what was measured\n');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const bar = process.stderr.isTTY ? new ProgressBar(process.stderr, options.timeBudgetMs) : undefined;
  let run;
  try {
    run = await analyze(options, measure, interrupt.signal, {
      progress: (p) => bar?.update(p),
      // Without a terminal, one line per candidate, for logs.
      measured: (model, result, base) => {
        if (!bar) process.stderr.write(`measured ${model}: ${result.isDefault ? 'as bound' : candidateChanges(result.candidate, base)}: ${resultText(result, options.objective)}\n`);
      },
    });
  } finally {
    bar?.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    fs.rmSync(options.workDir, { recursive: true, force: true });
  }
  const written = await writeReport(run, outputDir, line.measureWith === 'tstriton' ? 'tstriton perf (runPerf)' : 'perf_analyzer');
  for (const m of run.models) {
    const best = bestResult(m, options.objective);
    const confirmed = m.confirmation ? ` (${confirmationText(m, options.objective, false)})` : '';
    process.stdout.write(`${m.model}: ${m.results.length} candidates measured; ${best ? `best ${path.join(outputDir, m.model, 'config.pbtxt')}${confirmed}` : 'none met the objective'}\n`);
    const bound = best && machineBoundText(best, run.cores);
    if (bound) process.stdout.write(`${m.model}: ${bound}\n`);
  }
  process.stdout.write(`report: ${path.join(outputDir, 'report.md')}\n`);
  if (written.plotsNote) process.stderr.write(`tstriton: ${written.plotsNote}\n`);
  return run.interrupted ? INTERRUPTED_EXIT_CODE : 0;
}

/** The measurement the run uses. */
function measureFunction(measureWith: MeasureWith): MeasureFn {
  switch (measureWith) {
    case 'tstriton':
      return runPerf;
    case 'perf_analyzer':
      return perfAnalyzerMeasure();
  }
}
