import { TritonError } from '../base/errors';
import type { InferenceResponse } from '../model/inference';
import type { InferCall } from './infer-entry';
import type { ServerCore } from './server-core';

/**
 * The responses of `call`, to pull one at a time, for a writer that reads at its own pace (the OpenAI API). Each
 * response the core hands over waits until the reader has taken it, so a slow reader pauses a decoupled model as a
 * full socket does. A reader that stops early ends the request: the core's next hand-over fails, which cancels it.
 */
export async function* pullResponses(core: Pick<ServerCore, 'inferAsync'>, call: InferCall): AsyncGenerator<InferenceResponse & { final: boolean }> {
  const ready: (InferenceResponse & { final: boolean })[] = [];
  let taken: (() => void) | undefined;
  let wake: (() => void) | undefined;
  let settled = false;
  let failure: { error: unknown } | undefined;
  let closed = false;
  const finished = core
    .inferAsync(call, (response, final) => {
      if (closed) return Promise.reject(new TritonError('CANCELLED', 'the reader of the responses went away'));
      ready.push({ ...response, final });
      wake?.();
      return new Promise<void>((resolve) => (taken = resolve));
    })
    .then(
      () => undefined,
      (error: unknown) => void (failure = { error }),
    )
    .finally(() => {
      settled = true;
      wake?.();
    });
  try {
    for (;;) {
      const next = ready.shift();
      if (next !== undefined) {
        const release = taken;
        taken = undefined;
        yield next;
        release?.();
        continue;
      }
      if (settled) {
        if (failure) throw failure.error;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    closed = true;
    // A hand-over the reader never took: let it go on, to fail at the next one (or finish); `finished` never rejects.
    taken?.();
    void finished;
  }
}
