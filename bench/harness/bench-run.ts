/**
 * The frame of a benchmark script: a watchdog over the whole run, the load average before and after, and at
 * the end the block printed, written into docs/performance.md when asked, and the verdict on the bars.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { killChildren } from './child-proc';
import { writeDocBlock } from './doc-block';
import { UsageError } from './options';
import { repoRoot } from './repo-root';

/** Progress goes to stderr; the block goes to stdout. */
export const log = (s: string): void => void process.stderr.write(`${s}\n`);

/** What a benchmark's main function gets. */
export interface BenchContext {
  startedAt: Date;
  /** The 1-minute load average when the run started, and now. */
  loads(): [number, number];
  /** Seconds since the run started. */
  elapsedS(): number;
}

/** What a benchmark's main function ends with. */
export interface BenchOutcome {
  /** The docs/performance.md block it owns (see doc-block.ts), and its text. */
  key: string;
  body: string;
  /** Text printed after the block (profile summaries). */
  appendix?: string;
  write: boolean;
  allMet: boolean;
  /** The page of docs/ that holds the block (performance.md by default). */
  page?: string;
}

/**
 * Runs `main` as the benchmark `name` (`bench:http`), stopping the whole run past `watchdogMs`, children
 * included; prints and writes its block; kills what is left of its children when it ends.
 */
export function runBench(name: string, watchdogMs: number, main: (ctx: BenchContext) => Promise<BenchOutcome>): void {
  const startedAt = new Date();
  const loadBefore = os.loadavg()[0] as number;
  const ctx: BenchContext = {
    startedAt,
    loads: () => [loadBefore, os.loadavg()[0] as number],
    elapsedS: () => (Date.now() - startedAt.getTime()) / 1000,
  };
  const watchdog = setTimeout(() => {
    log(`${name}: still running after ${watchdogMs / 1000} s; stopping`);
    killChildren();
    process.exit(2);
  }, watchdogMs);
  watchdog.unref();
  main(ctx).then(
    (out) => {
      clearTimeout(watchdog);
      killChildren();
      process.stdout.write(`\n${out.body}\n${out.appendix ?? ''}`);
      if (out.write) log(`${name}: wrote the ${out.key} block of ${path.relative(repoRoot(), writeDocBlock(out.key, out.body, out.page))}`);
      log(`${name}: ${out.allMet ? 'all bars met' : 'some bars NOT met'} (${ctx.elapsedS().toFixed(0)} s)`);
    },
    (err: unknown) => {
      clearTimeout(watchdog);
      log(`${name}: ${err instanceof UsageError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      killChildren();
      process.exitCode = 1;
    },
  );
}
