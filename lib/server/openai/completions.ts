import type * as http from 'node:http';
import { randomUUID } from 'node:crypto';
import { cancelledError, type Cancellation } from '../../base/cancellation';
import { drained } from '../http/generate';
import type { InferCall } from '../infer-entry';
import type { ServerCore } from '../server-core';
import { checkTextModel, generate, generationRequest, UsageCounter, type GeneratedPiece } from './generation';
import { openAiError } from './openai-error';
import { echoOf, messagesOf, promptOf, samplingOf, type Body } from './openai-request';

/** What differs between `/v1/chat/completions` and `/v1/completions`: the prompt and the shape of a choice. */
interface CompletionKind {
  /** `chatcmpl` or `cmpl`. */
  readonly idPrefix: string;
  readonly object: string;
  readonly chunkObject: string;
  /**
   * The prompt of the request, and the text to put before the generated text (a completion's `echo`). A chat's
   * prompt comes from its model's chat template, which the core applies (a template may be a function of the
   * user's).
   */
  prompt(core: ServerCore, body: Body): { prompt: string; echo: string } | Promise<{ prompt: string; echo: string }>;
  /** A whole choice, non-streaming. */
  choice(text: string, finishReason: string): Record<string, unknown>;
  /** A streamed choice: a piece of text, or the end with its finish reason. */
  chunkChoice(text: string | undefined, finishReason: string | null): Record<string, unknown>;
  /** What the stream starts with before the first piece (a chat's assistant role). */
  readonly opening?: Record<string, unknown>;
}

const CHAT: CompletionKind = {
  idPrefix: 'chatcmpl',
  object: 'chat.completion',
  chunkObject: 'chat.completion.chunk',
  prompt: (core, body) => {
    const prompt = core.chatPrompt(body.model as string, () => messagesOf(body));
    return typeof prompt === 'string' ? { prompt, echo: '' } : prompt.then((text) => ({ prompt: text, echo: '' }));
  },
  choice: (text, finishReason) => ({ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }),
  chunkChoice: (text, finishReason) => ({ index: 0, delta: text === undefined ? {} : { content: text }, logprobs: null, finish_reason: finishReason }),
  opening: { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
};

const COMPLETION: CompletionKind = {
  idPrefix: 'cmpl',
  object: 'text_completion',
  chunkObject: 'text_completion',
  prompt: (_core, body) => {
    const prompt = promptOf(body);
    return { prompt, echo: echoOf(body) ? prompt : '' };
  },
  choice: (text, finishReason) => ({ index: 0, text, logprobs: null, finish_reason: finishReason }),
  chunkChoice: (text, finishReason) => ({ index: 0, text: text ?? '', logprobs: null, finish_reason: finishReason }),
};

/** `POST /v1/chat/completions` (`chat`) or `POST /v1/completions` on the model the body names. */
export async function handleCompletion(
  core: ServerCore,
  body: Body,
  res: http.ServerResponse,
  cancellation: Cancellation,
  chat: boolean,
): Promise<void> {
  const kind = chat ? CHAT : COMPLETION;
  const sampling = samplingOf(body, chat);
  const { prompt, echo } = await kind.prompt(core, body);
  const call: InferCall = {
    modelName: body.model as string,
    modelVersion: undefined,
    protocol: 'HTTP',
    decode: (model) => {
      checkTextModel(model);
      return generationRequest(model, prompt, sampling, cancellation);
    },
  };
  const head = { id: `${kind.idPrefix}-${randomUUID()}`, object: kind.object, created: Math.floor(Date.now() / 1000), model: body.model as string };
  const pieces = generate(core, call);
  const usage = new UsageCounter();
  if (!sampling.stream) {
    let text = '';
    let finishReason: string | undefined;
    for await (const piece of pieces) {
      text += piece.text;
      finishReason = piece.finishReason ?? finishReason;
      usage.add(piece);
    }
    const answer = JSON.stringify({ ...head, choices: [kind.choice(echo + text, finishReason ?? 'stop')], ...(usage.usage && { usage: usage.usage }) });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
    res.end(answer);
    return;
  }
  const chunkHead = { ...head, object: kind.chunkObject };
  const chunk = (choices: unknown[], extra?: Record<string, unknown>) =>
    `data: ${JSON.stringify({ ...chunkHead, choices, ...(sampling.includeUsage && { usage: null }), ...extra })}\n\n`;
  // The first response (or the error that comes instead) decides the status: an error before it is an ordinary
  // JSON error.
  const first = await pieces.next();
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
  let finishReason: string | undefined;
  const send = async (text: string) => {
    // A full socket buffer pauses the model's generator (through its bounded response stream).
    if (!res.write(text)) await drained(res);
  };
  try {
    if (kind.opening) await send(chunk([kind.opening]));
    if (echo !== '') await send(chunk([kind.chunkChoice(echo, null)]));
    const each = async (piece: GeneratedPiece) => {
      usage.add(piece);
      finishReason = piece.finishReason ?? finishReason;
      if (piece.text !== '') await send(chunk([kind.chunkChoice(piece.text, null)]));
    };
    if (!first.done) await each(first.value);
    while (!cancellation.aborted) {
      const next = await pieces.next();
      if (next.done) break;
      await each(next.value);
    }
    // The client went away (nothing reads what follows), or the request's deadline passed (an error event says so).
    if (cancellation.aborted) throw cancelledError(cancellation.reason);
    await send(chunk([kind.chunkChoice(undefined, finishReason ?? 'stop')]));
    if (sampling.includeUsage && usage.usage) await send(chunk([], { usage: usage.usage }));
    res.end('data: [DONE]\n\n');
  } catch (err) {
    // After the first chunk the status is sent: the error is one more event, in OpenAI's shape, and the stream ends.
    if (!res.writableEnded) res.end(`data: ${JSON.stringify({ error: openAiError(err).body })}\n\n`);
  } finally {
    await pieces.return(undefined);
  }
}
