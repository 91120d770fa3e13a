/**
 * `tstriton perf`: parses perf_analyzer's flags, runs `runPerf`, and prints perf_analyzer's report on stdout as
 * each step ends (on a terminal, stderr shows the step under way on one line), then writes the `-f` CSV and the
 * `--json` report. Ctrl-C ends the step under way and reports the steps so far.
 */
import { writeFileSync } from 'node:fs';
import { invalidConfig } from '../base/errors';
import { parsePerfArgs, perfHelpText } from './perf-flags';
import { csvText, loadHeading, settingsText, stepText, summaryText } from './perf-report';
import type { PerfProgress } from './perf-types';
import { runPerf } from './run-perf';

/** Runs `tstriton perf` with `argv` (the arguments after `perf`) and resolves with the exit code. */
export async function perf(argv: readonly string[]): Promise<number> {
  const line = parsePerfArgs(argv);
  if (line.help) {
    process.stdout.write(perfHelpText());
    return 0;
  }
  const { options } = line;
  const percentile = options.percentile;
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  const live = process.stderr.isTTY === true;
  let headed = -1;
  const heading = (p: PerfProgress): void => {
    if (headed === p.stepIndex) return;
    // The settings wait for the first step, so that a run that cannot start says only why.
    if (headed < 0) process.stdout.write(`${settingsText(options)}\n`);
    headed = p.stepIndex;
    process.stdout.write(`${p.stepIndex === 0 ? '' : '\n'}${loadHeading(p.load)}\n`);
  };
  const onProgress = (p: PerfProgress): void => {
    heading(p);
    if (p.step) {
      if (live) process.stderr.write('\r\x1b[K');
      process.stdout.write(stepText(p.step, options.target.protocol, percentile));
    } else if (live) {
      process.stderr.write(`\r\x1b[K  window ${p.trial}: ${p.requestsSoFar} requests`);
    }
  };
  try {
    const report = await runPerf({ ...options, signal: abort.signal }, onProgress);
    process.stdout.write(`\n${summaryText(report, percentile)}`);
    if (line.csvFile !== undefined) write(line.csvFile, csvText(report, line.verboseCsv, percentile));
    if (line.jsonFile !== undefined) write(line.jsonFile, `${JSON.stringify(report, null, 2)}\n`);
    return 0;
  } finally {
    if (live) process.stderr.write('\r\x1b[K');
    process.off('SIGINT', onSignal);
  }
}

function write(file: string, text: string): void {
  try {
    writeFileSync(file, text);
  } catch (err) {
    throw invalidConfig(`cannot write ${file}: ${(err as Error).message}`);
  }
}
