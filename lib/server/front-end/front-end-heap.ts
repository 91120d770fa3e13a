import type { ResourceLimits } from 'node:worker_threads';

/**
 * The resource limits a front-end thread starts with: a young generation of `youngGenerationMb` (the
 * `httpThreadYoungGenerationMegabytes` setting), unless that is 0 or node was started with `--max-semi-space-size`,
 * whose value then holds for every heap of the process.
 */
export function frontEndResourceLimits(youngGenerationMb: number, execArgv: readonly string[] = process.execArgv): ResourceLimits {
  const given = execArgv.some((arg) => arg.replace(/_/g, '-').startsWith('--max-semi-space-size'));
  return youngGenerationMb === 0 || given ? {} : { maxYoungGenerationSizeMb: youngGenerationMb };
}
