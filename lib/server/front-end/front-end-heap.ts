import type { ResourceLimits } from 'node:worker_threads';

/**
 * The young generation of a front-end thread's heap, in MB: three semi-spaces of 16 MB (two for the scavenger,
 * one for new large objects), the size Node 20's V8 gave every heap. Node 24's V8 grows a heap's semi-spaces to
 * 64 MB under load and keeps them until a memory-reducing collection: 192 MB a thread, and a flood of requests left
 * every front-end thread's young generation at its largest (docs/threads.md, "Memory"). A front-end thread's objects
 * live for one request (parsed, decoded, handed over, answered); with two front-end threads, bench:cores measured the
 * same CPU per request with either size, within the noise of a shared 2-core machine.
 */
export const FRONT_END_YOUNG_GENERATION_MB = 48;

/**
 * The resource limits a front-end thread starts with: its young generation as above, unless node was started with
 * `--max-semi-space-size` (the operator's setting then holds for every heap of the process).
 */
export function frontEndResourceLimits(execArgv: readonly string[] = process.execArgv): ResourceLimits {
  const given = execArgv.some((arg) => arg.replace(/_/g, '-').startsWith('--max-semi-space-size'));
  return given ? {} : { maxYoungGenerationSizeMb: FRONT_END_YOUNG_GENERATION_MB };
}
