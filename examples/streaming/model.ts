import { tensor, type Request, type Tensor, type Triton } from 'tstriton';
import { sample } from 'tstriton/decorators';

/** Delay between tokens, to make the streaming visible. */
const TOKEN_DELAY_MS = Number(process.env.STREAM_TOKEN_DELAY_MS ?? 20);

/**
 * Binds `stream_tokens`, a decoupled model: it streams the prompt's whitespace-separated words back, one
 * response per word with a short delay, then finishes. It stops as soon as the client goes away.
 */
export function bindStreamTokens(triton: Triton): void {
  const streamWords = sample(async function* (inputs: Record<string, Tensor>, request: Request) {
      const prompt = Buffer.from((inputs.PROMPT as Tensor<'BYTES'>).data[0] ?? []).toString('utf8');
      for (const word of prompt.split(/\s+/).filter(Boolean)) {
        if (TOKEN_DELAY_MS > 0) await sleep(TOKEN_DELAY_MS, request.signal);
        if (request.signal.aborted) return;
        yield { TOKEN: tensor('BYTES', [1], [word]) };
      }
    });
  triton.bind({
    modelName: 'stream_tokens',
    // A stream holds its instance until it ends: several instances let streams run side by side.
    inferFunc: Array.from({ length: 8 }, () => streamWords),
    inputs: [{ name: 'PROMPT', dtype: 'BYTES', shape: [1] }],
    outputs: [{ name: 'TOKEN', dtype: 'BYTES', shape: [1] }],
    config: { batching: false, decoupled: true },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
