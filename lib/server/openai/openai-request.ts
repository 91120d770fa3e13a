import { TritonError } from '../../base/errors';
import type { ChatMessage } from '../../model/chat-template';
import { decodeUtf8, parseJson } from '../../tensor/lossless-json';
import { invalidParam } from './openai-error';

/**
 * The OpenAI request bodies, read and checked: what each endpoint takes, with a 400 naming the field for
 * anything else. Fields the server does not act on and that change nothing (`user`, `metadata`, `store`) are
 * ignored; features it does not implement (tools, logprobs, several choices) are refused, never ignored.
 */

/** A request body: one JSON object. */
export type Body = Readonly<Record<string, unknown>>;

/** Parses a request body; bad JSON gets OpenAI's 400. */
export function parseBody(bytes: Buffer, maxDepth: number): Body {
  let body: unknown;
  try {
    body = parseJson(decodeUtf8(bytes), maxDepth);
  } catch (err) {
    throw new TritonError('INVALID_ARGUMENT', `We could not parse the JSON body of your request: ${(err as Error).message}. The API expects a JSON payload.`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new TritonError('INVALID_ARGUMENT', 'The request body must be a JSON object.');
  return body as Body;
}

/** The `model` of a request. */
export function modelOf(body: Body): string {
  const model = body.model;
  if (model === undefined || model === null) throw invalidParam('model', "Missing required parameter: 'model'.", 'missing_required_parameter');
  if (typeof model !== 'string' || model === '') throw invalidParam('model', `Invalid type for 'model': expected a non-empty string, got ${describe(model)}.`, 'invalid_type');
  return model;
}

/** What a completion or chat completion asks of the model besides its prompt. */
export interface Sampling {
  /** Sampling parameters, under Triton's LLM names (`max_tokens`, `temperature`, `top_p`, `stop`, `seed`, ...). */
  readonly parameters: Readonly<Record<string, number | string | readonly string[]>>;
  /** The request field each parameter came from, named in errors (`max_tokens` may be `max_completion_tokens`). */
  readonly fields: Readonly<Record<string, string>>;
  readonly stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage. */
  readonly includeUsage: boolean;
}

/** Number fields passed on to the model, with their allowed range. */
const NUMBERS: readonly (readonly [string, number, number])[] = [
  ['temperature', 0, 2],
  ['top_p', 0, 1],
  ['frequency_penalty', -2, 2],
  ['presence_penalty', -2, 2],
];

/**
 * The largest `max_tokens`: Triton's LLM models (vLLM, TensorRT-LLM) take it as an INT32 input, and no model
 * generates more tokens than that.
 */
const MAX_TOKENS_LIMIT = 2 ** 31 - 1;

/** The roles a chat message may have, as OpenAI's schema names them (`function`, deprecated with function calling, is not served). */
export const CHAT_ROLES: readonly string[] = ['system', 'developer', 'user', 'assistant', 'tool'];

/** Reads the sampling fields shared by `/v1/completions` and `/v1/chat/completions`, refusing unsupported ones. */
export function samplingOf(body: Body, chat: boolean): Sampling {
  refuseUnsupported(body, chat);
  const parameters: Record<string, number | string | readonly string[]> = {};
  const fields: Record<string, string> = {};
  const maxTokens = given(body, chat ? 'max_completion_tokens' : 'max_tokens') ? (chat ? 'max_completion_tokens' : 'max_tokens') : given(body, 'max_tokens') ? 'max_tokens' : undefined;
  if (maxTokens !== undefined) {
    parameters.max_tokens = integer(body, maxTokens, 1, MAX_TOKENS_LIMIT);
    fields.max_tokens = maxTokens;
  }
  for (const [name, min, max] of NUMBERS) {
    if (!given(body, name)) continue;
    const v = body[name];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidParam(name, `Invalid type for '${name}': expected a number, got ${describe(v)}.`, 'invalid_type');
    if (v < min || v > max) throw invalidParam(name, `Invalid '${name}': ${v} is not between ${min} and ${max}.`);
    parameters[name] = v;
  }
  if (given(body, 'seed')) parameters.seed = integer(body, 'seed', Number.MIN_SAFE_INTEGER);
  if (given(body, 'stop')) parameters.stop = stopOf(body.stop);
  for (const name of Object.keys(parameters)) fields[name] ??= name;
  const stream = given(body, 'stream') ? bool(body, 'stream') : false;
  let includeUsage = false;
  if (given(body, 'stream_options')) {
    if (!stream) throw invalidParam('stream_options', "'stream_options' is only allowed when 'stream' is true.");
    const options = body.stream_options;
    if (typeof options !== 'object' || Array.isArray(options)) throw invalidParam('stream_options', `Invalid type for 'stream_options': expected an object, got ${describe(options)}.`, 'invalid_type');
    includeUsage = given(options as Body, 'include_usage') ? bool(options as Body, 'include_usage', 'stream_options.include_usage') : false;
  }
  return { parameters, fields, stream, includeUsage };
}

/** The messages of a chat completion, their content reduced to text. */
export function messagesOf(body: Body): ChatMessage[] {
  const messages = body.messages;
  if (messages === undefined || messages === null) throw invalidParam('messages', "Missing required parameter: 'messages'.", 'missing_required_parameter');
  if (!Array.isArray(messages)) throw invalidParam('messages', `Invalid type for 'messages': expected an array, got ${describe(messages)}.`, 'invalid_type');
  if (messages.length === 0) throw invalidParam('messages', "Invalid 'messages': empty array. Expected an array with minimum length 1.", 'empty_array');
  return messages.map((m: unknown, i) => {
    const where = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw invalidParam(where, `Invalid type for '${where}': expected an object, got ${describe(m)}.`, 'invalid_type');
    const { role, content, name } = m as Body;
    if (role === undefined || role === null) throw invalidParam(`${where}.role`, `Missing required parameter: '${where}.role'.`, 'missing_required_parameter');
    if (typeof role !== 'string' || !CHAT_ROLES.includes(role)) {
      // Templated as it is, an unknown role would put a turn of the client's choosing (`<|wizard|>`) into the prompt.
      throw invalidParam(`${where}.role`, `Invalid value for '${where}.role': ${describe(role)}. Supported values are: ${CHAT_ROLES.map((r) => `'${r}'`).join(', ')}.`, 'invalid_value');
    }
    if (name !== undefined && typeof name !== 'string') throw invalidParam(`${where}.name`, `Invalid type for '${where}.name': expected a string.`, 'invalid_type');
    return { role, content: contentText(content, `${where}.content`), ...(name !== undefined && { name }) };
  });
}

/** The prompt of a completion: a string, or a list of one string. */
export function promptOf(body: Body): string {
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null) throw invalidParam('prompt', "Missing required parameter: 'prompt'.", 'missing_required_parameter');
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'string')) {
    if (prompt.length === 1) return prompt[0] as string;
    throw invalidParam('prompt', `Only one prompt per request is supported, got ${prompt.length}.`, 'unsupported_value');
  }
  throw invalidParam('prompt', 'Invalid prompt: expected a string or a list of one string (token arrays are not supported).', 'invalid_type');
}

/** Whether a completion echoes its prompt before the generated text. */
export function echoOf(body: Body): boolean {
  return given(body, 'echo') ? bool(body, 'echo') : false;
}

/** The texts of an embeddings request, and how their vectors are written. */
export interface EmbeddingsRequest {
  readonly texts: readonly string[];
  readonly encoding: 'float' | 'base64';
  readonly dimensions?: number;
}

/** Reads `/v1/embeddings`: `input` a string or a list of strings. */
export function embeddingsOf(body: Body): EmbeddingsRequest {
  const input = body.input;
  if (input === undefined || input === null) throw invalidParam('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  let texts: string[];
  if (typeof input === 'string') texts = [input];
  else if (Array.isArray(input) && input.length > 0 && input.every((t) => typeof t === 'string')) texts = input as string[];
  else if (Array.isArray(input) && input.length === 0) throw invalidParam('input', "Invalid 'input': empty array. Expected an array with minimum length 1.", 'empty_array');
  else throw invalidParam('input', "Invalid 'input': expected a string or a list of strings (token arrays are not supported).", 'invalid_type');
  const encoding = body.encoding_format ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') throw invalidParam('encoding_format', `Invalid 'encoding_format': expected 'float' or 'base64', got ${describe(encoding)}.`);
  const dimensions = given(body, 'dimensions') ? integer(body, 'dimensions', 1) : undefined;
  return { texts, encoding, ...(dimensions !== undefined && { dimensions }) };
}

function refuseUnsupported(body: Body, chat: boolean): void {
  if (given(body, 'n') && body.n !== 1) throw invalidParam('n', `Only one choice per request (n=1) is supported, got n=${describe(body.n)}.`, 'unsupported_value');
  if (given(body, 'best_of') && body.best_of !== 1) throw invalidParam('best_of', 'best_of is not supported.', 'unsupported_parameter');
  if (given(body, 'suffix')) throw invalidParam('suffix', 'suffix is not supported.', 'unsupported_parameter');
  if (given(body, 'logit_bias') && Object.keys(body.logit_bias as object).length > 0) throw invalidParam('logit_bias', 'logit_bias is not supported.', 'unsupported_parameter');
  const logprobs = body.logprobs;
  if (given(body, 'logprobs') && logprobs !== false && logprobs !== 0) throw invalidParam('logprobs', 'logprobs are not supported.', 'unsupported_parameter');
  if (given(body, 'top_logprobs') && body.top_logprobs !== 0) throw invalidParam('top_logprobs', 'top_logprobs are not supported.', 'unsupported_parameter');
  if (!chat) return;
  if (Array.isArray(body.tools) && body.tools.length > 0) throw invalidParam('tools', 'Tools (function calling) are not supported.', 'unsupported_parameter');
  if (given(body, 'functions')) throw invalidParam('functions', 'Function calling is not supported.', 'unsupported_parameter');
  if (given(body, 'tool_choice') && body.tool_choice !== 'none') throw invalidParam('tool_choice', 'Tools (function calling) are not supported.', 'unsupported_parameter');
  const format = body.response_format as Body | undefined;
  if (given(body, 'response_format') && format?.type !== 'text') throw invalidParam('response_format', "Only the response format 'text' is supported.", 'unsupported_value');
}

/** Text of a message's content: a string, a list of text parts, or null (an assistant turn without text). */
function contentText(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part: unknown, i) => {
        const p = part as Body | null;
        if (typeof p !== 'object' || p === null || p.type !== 'text' || typeof p.text !== 'string') {
          throw invalidParam(`${where}[${i}]`, `Invalid content part '${where}[${i}]': only text parts ({"type": "text", "text": ...}) are supported.`, 'unsupported_value');
        }
        return p.text;
      })
      .join('');
  }
  throw invalidParam(where, `Invalid type for '${where}': expected a string or a list of text parts, got ${describe(content)}.`, 'invalid_type');
}

function stopOf(stop: unknown): string | string[] {
  if (typeof stop === 'string') return stop;
  if (Array.isArray(stop) && stop.length <= 4 && stop.every((s) => typeof s === 'string')) return stop as string[];
  throw invalidParam('stop', "Invalid 'stop': expected a string or a list of up to 4 strings.", 'invalid_type');
}

/** A field that is present and not null (clients send null for "not given"). */
function given(body: Body, name: string): boolean {
  return body[name] !== undefined && body[name] !== null;
}

function integer(body: Body, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = body[name];
  // An integer beyond 2^53 is parsed exactly, as a BigInt: out of range whatever `max` is.
  if (typeof v === 'bigint') throw invalidParam(name, v < 0n ? `Invalid '${name}': ${v} is below the minimum, ${min}.` : `Invalid '${name}': ${v} is above the maximum, ${max}.`);
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidParam(name, `Invalid type for '${name}': expected an integer, got ${describe(v)}.`, 'invalid_type');
  if (v < min) throw invalidParam(name, `Invalid '${name}': ${v} is below the minimum, ${min}.`);
  if (v > max) throw invalidParam(name, `Invalid '${name}': ${v} is above the maximum, ${max}.`);
  return v;
}

function bool(body: Body, name: string, param = name): boolean {
  const v = body[name];
  if (typeof v !== 'boolean') throw invalidParam(param, `Invalid type for '${param}': expected a boolean, got ${describe(v)}.`, 'invalid_type');
  return v;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}
