import type { Cancellation } from '../../base/cancellation';
import { TritonError } from '../../base/errors';
import type { InferenceRequest, InferenceResponse, NamedTensor } from '../../model/inference';
import type { ModelView } from '../../model/model-view';
import { generateRequest } from '../http/generate';
import type { InferCall } from '../infer-entry';
import { pullResponses } from '../pull-responses';
import type { ServerCore } from '../server-core';
import { invalidParam } from './openai-error';
import type { Sampling } from './openai-request';

/**
 * Text generation on a bound model, with Triton's LLM conventions (those of its `generate` endpoint and its
 * OpenAI frontend): the prompt goes to input `text_input`; `stream`, the sampling parameters and the optional
 * switches below go to the inputs of those names when the model declares them, and otherwise travel as request
 * parameters; the text comes back in output `text_output`, one piece per response of a decoupled model.
 */

/** The prompt input. */
export const TEXT_INPUT = 'text_input';
/** The generated text output. */
export const TEXT_OUTPUT = 'text_output';
/** Token counts the model may report, as outputs or response parameters (Triton's vLLM names). */
export const PROMPT_TOKENS = 'num_input_tokens';
const COMPLETION_TOKENS = 'num_output_tokens';
/** Why the model stopped (`stop`, `length`), as an output or a response parameter; `stop` when absent. */
const FINISH_REASON = 'finish_reason';

/** One piece of generated text, with what the response reported besides. */
export interface GeneratedPiece {
  readonly text: string;
  readonly finishReason?: string;
  readonly promptTokens?: number;
  readonly completionTokens?: number;
}

/** Token usage in OpenAI's form. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** Checks that `model` can generate text: a BYTES `text_input` input and a BYTES `text_output` output. */
export function checkTextModel(model: ModelView): void {
  const input = model.inputs.find((s) => s.name === TEXT_INPUT);
  const output = model.outputs.find((s) => s.name === TEXT_OUTPUT);
  if (input?.dtype !== 'BYTES' || output?.dtype !== 'BYTES') {
    throw new TritonError('INVALID_ARGUMENT', `model '${model.name}' cannot generate text: it needs a BYTES input '${TEXT_INPUT}' and a BYTES output '${TEXT_OUTPUT}'`);
  }
}

/** The inference request of a prompt: Triton's generate mapping of `text_input`, `stream` and the sampling fields. */
export function generationRequest(model: ModelView, prompt: string, sampling: Sampling, cancellation: Cancellation): InferenceRequest {
  const inputs = new Set(model.inputs.map((s) => s.name));
  const fields: Record<string, unknown> = { [TEXT_INPUT]: prompt, stream: sampling.stream };
  /** The request field of each input a sampling field fills. */
  const requestField = new Map<string, string>();
  for (const [field, value] of Object.entries(sampling.parameters)) {
    // TensorRT-LLM's models name the stop strings `stop_words`.
    const name = field === 'stop' && !inputs.has('stop') && inputs.has('stop_words') ? 'stop_words' : field;
    // A list (`stop`) fills a BYTES input; as a request parameter, which holds scalars only, it travels as JSON.
    fields[name] = Array.isArray(value) && !inputs.has(name) ? JSON.stringify(value) : value;
    requestField.set(name, sampling.fields[field] ?? field);
  }
  // The switches of Triton's vLLM and TensorRT-LLM models, set when declared: no prompt in the output, and counts.
  if (inputs.has('exclude_input_in_output')) fields.exclude_input_in_output = true;
  if (inputs.has('return_num_input_tokens')) fields.return_num_input_tokens = true;
  if (inputs.has('return_num_output_tokens')) fields.return_num_output_tokens = true;
  if (inputs.has('sampling_parameters')) fields.sampling_parameters = JSON.stringify(sampling.parameters);
  // A value the model's input cannot hold (a max_tokens beyond its INT32) is the client's, named as OpenAI names it.
  return generateRequest(fields, model, cancellation, (input, err) => {
    const field = requestField.get(input);
    if (field === undefined || !(err instanceof TritonError) || err.code !== 'INVALID_ARGUMENT') return err;
    return invalidParam(field, `Invalid '${field}' for model '${model.name}': ${err.message}`);
  });
}

/**
 * Runs a generation request: one piece per response that carries outputs or parameters, as the responses come
 * (pulled, so that a slow writer pauses the model).
 */
export async function* generate(core: Pick<ServerCore, 'inferAsync'>, call: InferCall): AsyncGenerator<GeneratedPiece> {
  for await (const response of pullResponses(core, call)) if (response.outputs.length > 0 || response.parameters !== undefined) yield pieceOf(response);
}

/** Adds up the token counts of a generation's pieces: the prompt's from the first report, the completion's summed. */
export class UsageCounter {
  private prompt: number | undefined;
  private completion = 0;
  private reported = false;

  add(piece: GeneratedPiece): void {
    if (piece.promptTokens === undefined && piece.completionTokens === undefined) return;
    this.reported = true;
    this.prompt ??= piece.promptTokens;
    this.completion += piece.completionTokens ?? 0;
  }

  /** The usage, or undefined when the model reported no count. */
  get usage(): Usage | undefined {
    if (!this.reported) return undefined;
    const prompt = this.prompt ?? 0;
    return { prompt_tokens: prompt, completion_tokens: this.completion, total_tokens: prompt + this.completion };
  }
}

function pieceOf(response: InferenceResponse): GeneratedPiece {
  const byName = new Map<string, NamedTensor>(response.outputs.map((o) => [o.name, o]));
  // Response parameters, where the callable returned them with its outputs.
  const parameters = response.parameters ?? {};
  const finishReason = textOf(byName.get(FINISH_REASON)) ?? stringParam(parameters[FINISH_REASON]);
  const promptTokens = reportedCount(response, PROMPT_TOKENS);
  const completionTokens = reportedCount(response, COMPLETION_TOKENS);
  return {
    text: textOf(byName.get(TEXT_OUTPUT)) ?? '',
    ...(finishReason !== undefined && finishReason !== '' && { finishReason }),
    ...(promptTokens !== undefined && { promptTokens }),
    ...(completionTokens !== undefined && { completionTokens }),
  };
}

/** The UTF-8 text of a BYTES tensor, its elements joined. */
function textOf(output: NamedTensor | undefined): string | undefined {
  if (output?.tensor.dtype !== 'BYTES') return undefined;
  return (output.tensor.data as Uint8Array[]).map((e) => Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8')).join('');
}

/** A count a response reports: the first element of the numeric output `name`, or else its response parameter `name`. */
export function reportedCount(response: InferenceResponse, name: string): number | undefined {
  const output = response.outputs.find((o) => o.name === name);
  if (output && output.tensor.dtype !== 'BYTES' && output.tensor.data.length > 0) {
    const v = Number((output.tensor.data as ArrayLike<number | bigint>)[0]);
    if (Number.isFinite(v)) return v;
  }
  return numberParam(response.parameters?.[name]);
}

function stringParam(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function numberParam(v: unknown): number | undefined {
  if (typeof v === 'bigint') return Number(v);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
