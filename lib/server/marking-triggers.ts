import { setFlagsFromString } from 'node:v8';

/** When V8 starts marking the heap for a full collection, in percent of the room left below its limit. */
export interface MarkingTriggers {
  /** Start marking from a task once this much of the room is used; 0 leaves V8's own rule. */
  soft: number;
  /** Start marking at once past this much; 0 leaves V8's own rule. */
  hard: number;
}

const FLAGS = { soft: 'incremental-marking-soft-trigger', hard: 'incremental-marking-hard-trigger' } as const;

/**
 * The V8 flags that set `triggers`, less those the process was started with (`node --incremental-marking-…`): a
 * flag given on the command line is the operator's and stays. A trigger of 0 sets nothing.
 */
export function markingTriggerFlags(triggers: MarkingTriggers, execArgv: readonly string[] = process.execArgv): string[] {
  const given = (flag: string) => execArgv.some((arg) => arg.replace(/_/g, '-').startsWith(`--${flag}`));
  const flags: string[] = [];
  for (const key of ['soft', 'hard'] as const) {
    const percent = triggers[key];
    if (percent > 0 && !given(FLAGS[key])) flags.push(`--${FLAGS[key]}=${percent}`);
  }
  return flags;
}

/**
 * Sets V8's marking triggers for this process. By its own rule, V8 starts marking when the room left below its limit
 * looks short against its young generation (16 MB); on a small heap under large tensors that was within
 * milliseconds of each full collection, and the server marked without pause (docs/performance.md, "Large tensors
 * over gRPC"). With the triggers, marking starts once a share of the room is used; the limit stays V8's. Returns the
 * flags it set.
 */
export function applyMarkingTriggers(triggers: MarkingTriggers): string[] {
  const flags = markingTriggerFlags(triggers);
  for (const flag of flags) setFlagsFromString(flag);
  return flags;
}
