import { Counter } from 'prom-client';
import { tensor, type Request, type Tensor, type Triton } from 'tstriton';
import { sample } from 'tstriton/decorators';

/** Delay between words, to make the streaming visible; STREAM_TOKEN_DELAY_MS overrides it. */
const WORD_DELAY_MS = Number(process.env.STREAM_TOKEN_DELAY_MS ?? 20);

/**
 * The chat template `echo_chat` is bound with: each message as `<|role|>` and its text, and `<|assistant|>` at the
 * end for the reply. A real LLM's template has the special tokens it was trained with.
 */
export const ECHO_CHAT_TEMPLATE = '<|{role}|>\n{content}\n';

/** The reply `echo_chat` gives to a prompt: what the last user message said, quoted. */
export function echoReply(prompt: string): string {
  const turns = prompt.split('<|user|>\n');
  const last = turns.length > 1 ? (turns[turns.length - 1] ?? '') : prompt;
  const said = last.split('\n<|')[0]?.trim() ?? '';
  return `You said: ${said}`;
}

/**
 * Binds `echo_chat`, a decoupled model with Triton's LLM inputs and outputs (`text_input`, `stream`,
 * `max_tokens` → `text_output`), a stand-in for a real LLM: it streams back a deterministic reply word by word,
 * stopping at `max_tokens` words (finish reason `length`), and reports token counts (one per word) for `usage`.
 * It stops as soon as the client goes away, and counts the replies it stopped so in the metric
 * `echo_chat_stopped_total`. Served over the OpenAI-compatible API with `openai: true`.
 */
export function bindEchoChat(triton: Triton): void {
  const stopped = new Counter({ name: 'echo_chat_stopped_total', help: 'Replies echo_chat stopped before their end because the client went away.', registers: [triton.metrics.registry] });
  const chat = sample(async function* (inputs: Record<string, Tensor>, request: Request) {
    const prompt = Buffer.from((inputs.text_input as Tensor<'BYTES'>).data[0] ?? []).toString('utf8');
    const maxTokens = inputs.max_tokens ? (inputs.max_tokens.data as Int32Array)[0]! : Infinity;
    const words = echoReply(prompt).split(' ');
    const count = Math.min(words.length, maxTokens);
    const promptTokens = prompt.split(/\s+/).filter(Boolean).length;
    let done = 0;
    try {
      for (; done < count; done++) {
        if (WORD_DELAY_MS > 0) await sleep(WORD_DELAY_MS, request.signal);
        if (request.signal.aborted) return;
        const last = done === count - 1;
        yield {
          text_output: tensor('BYTES', [1], [last ? words[done]! : `${words[done]!} `]),
          num_input_tokens: tensor('UINT32', [1], Uint32Array.of(promptTokens)),
          num_output_tokens: tensor('UINT32', [1], Uint32Array.of(1)),
          finish_reason: tensor('BYTES', [1], [last ? (count < words.length ? 'length' : 'stop') : '']),
        };
      }
    } finally {
      // Left before its last word: the client went away (the signal fired, or the generator was closed at a yield).
      if (done < count) stopped.inc();
    }
  });
  triton.bind({
    modelName: 'echo_chat',
    // A stream holds its instance until it ends: several instances let chats run side by side.
    inferFunc: Array.from({ length: 8 }, () => chat),
    inputs: [
      { name: 'text_input', dtype: 'BYTES', shape: [1] },
      { name: 'stream', dtype: 'BOOL', shape: [1], optional: true },
      { name: 'max_tokens', dtype: 'INT32', shape: [1], optional: true },
    ],
    outputs: [
      { name: 'text_output', dtype: 'BYTES', shape: [1] },
      { name: 'num_input_tokens', dtype: 'UINT32', shape: [1] },
      { name: 'num_output_tokens', dtype: 'UINT32', shape: [1] },
      { name: 'finish_reason', dtype: 'BYTES', shape: [1] },
    ],
    config: { batching: false, decoupled: true },
    chatTemplate: ECHO_CHAT_TEMPLATE,
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
