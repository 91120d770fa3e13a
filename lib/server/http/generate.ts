import type * as http from 'node:http';
import { Cancellation } from '../../base/cancellation';
import { TritonError, toTritonError } from '../../base/errors';
import type { InferenceRequest, InferenceResponse, NamedTensor } from '../../model/inference';
import type { ModelView } from '../../model/model-view';
import { decodeJsonData, encodeJsonData } from '../../tensor/json-codec';
import { decodeUtf8, parseJson } from '../../tensor/lossless-json';
import type { InferCall } from '../infer-entry';
import { parseParameters } from '../parameters';
import type { ServerCore } from '../server-core';
import { readBody } from './body';

/**
 * The generate extension: `POST /v2/models/{m}/generate` answers one JSON object, `/generate_stream` answers
 * Server-Sent Events, one `data: {...}` per response. Top-level keys (and keys of `parameters`) named like a
 * model input become that tensor; every other key is a request parameter.
 */
export async function handleGenerate(core: ServerCore, modelName: string, version: string | undefined, req: http.IncomingMessage, res: http.ServerResponse, stream: boolean): Promise<void> {
  const cancellation = new Cancellation();
  res.once('close', () => {
    if (!res.writableFinished) cancellation.abort();
  });
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') throw new TritonError('INVALID_ARGUMENT', "Unsupported content-encoding, only 'identity' is supported.");
  const body = await readBody(req, core.config.httpMaxInputSize);
  const call: InferCall = {
    modelName,
    modelVersion: version,
    protocol: 'HTTP',
    headers: req.headers,
    decode: (model) => decodeGenerate(decodeUtf8(body), model, core.config.jsonMaxDepth, cancellation),
  };
  if (!stream) {
    const all: InferenceResponse[] = [];
    await core.inferAsync(call, (r) => void (r.outputs.length > 0 && all.push(r)));
    if (all.length !== 1) {
      throw new TritonError('INVALID_ARGUMENT', `generate expects model to produce exactly 1 response, use generate stream for model with decoupled transaction policy (got ${all.length})`);
    }
    const answer = encodeGenerate(all[0] as InferenceResponse);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer) });
    res.end(answer);
    return;
  }
  let started = false;
  try {
    await core.inferAsync(call, (r) => {
      if (r.outputs.length === 0) return undefined;
      if (!started) {
        res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
        started = true;
      }
      // A full socket buffer pauses the model's generator (through its bounded response stream).
      return res.write(`data: ${encodeGenerate(r)}\n\n`) ? undefined : drained(res);
    });
  } catch (err) {
    if (!started) throw err;
    res.write(`data: ${JSON.stringify({ error: toTritonError(err).message })}\n\n`);
  }
  if (!started) res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
  res.end();
}

/** Resolves when `res` can take more writes, or has closed. */
export function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** Turns a generate body into an inference request, fitting each input's values to its shape. */
export function decodeGenerate(text: string, model: ModelView, maxDepth: number, cancellation: Cancellation): InferenceRequest {
  const body = parseJson(text, maxDepth);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new TritonError('INVALID_ARGUMENT', 'the generate request must be a JSON object');
  return generateRequest(body as Record<string, unknown>, model, cancellation);
}

/**
 * The inference request of a generate body's fields: each field named like a model input becomes that input,
 * fitted to its shape; the others are request parameters. `inputError` may reword the error of a value that does
 * not fit its input (the OpenAI frontend names the request field it came from).
 */
export function generateRequest(
  fields: Readonly<Record<string, unknown>>,
  model: ModelView,
  cancellation: Cancellation,
  inputError: (input: string, err: unknown) => unknown = (_input, err) => err,
): InferenceRequest {
  const nested = typeof fields.parameters === 'object' && fields.parameters !== null && !Array.isArray(fields.parameters) ? (fields.parameters as Record<string, unknown>) : {};
  const inputNames = new Set(model.inputs.map((s) => s.name));
  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(nested)) if (!inputNames.has(k)) params[k] = v;
  for (const [k, v] of Object.entries(fields)) if (!inputNames.has(k) && k !== 'id' && k !== 'parameters') params[k] = v;
  const { parameters, priority, timeoutMicroseconds } = parseParameters(params, 'generate request');
  const batching = model.config.effectiveMaxBatchSize > 0;
  const inputs: NamedTensor[] = [];
  for (const spec of model.inputs) {
    const value = spec.name in fields ? fields[spec.name] : nested[spec.name];
    if (value === undefined) continue;
    const flat = Array.isArray(value) ? value.flat(Infinity) : [value];
    try {
      const shape = fitShape(batching ? [1, ...spec.shape] : [...spec.shape], flat.length, spec.name);
      inputs.push({ name: spec.name, tensor: { dtype: spec.dtype, shape, data: decodeJsonData(spec.dtype, shape, flat, `input '${spec.name}'`) } });
    } catch (err) {
      throw inputError(spec.name, err);
    }
  }
  const id = fields.id;
  if (id !== undefined && typeof id !== 'string') throw new TritonError('INVALID_ARGUMENT', "the request 'id' must be a string");
  return { modelName: model.name, modelVersion: model.version, id: id ?? '', inputs, parameters, priority, timeoutMicroseconds, cancellation };
}

/** Fills the -1 dims of a shape (batch dim included) so that it holds `count` elements. */
function fitShape(shape: number[], count: number, name: string): number[] {
  const variable = shape.map((d, i) => (d === -1 ? i : -1)).filter((i) => i >= 0);
  const fixed = shape.reduce((n, d) => (d === -1 ? n : n * d), 1);
  if (variable.length === 0) {
    if (fixed !== count) throw new TritonError('INVALID_ARGUMENT', `input '${name}': ${count} value(s) do not fit shape [${shape.join(',')}]`);
    return shape;
  }
  const rest = fixed === 0 ? 0 : count / fixed;
  if (!Number.isInteger(rest)) throw new TritonError('INVALID_ARGUMENT', `input '${name}': ${count} value(s) do not fit shape [${shape.join(',')}]`);
  // The last variable dim takes the values; any other variable dims are 1.
  return shape.map((d, i) => (d !== -1 ? d : i === variable[variable.length - 1] ? rest : 1));
}

/** A generate response: model name and version, and each output by name, unwrapped to a scalar when it holds one element. */
export function encodeGenerate(response: InferenceResponse): string {
  const parts = [`"model_name":${JSON.stringify(response.modelName)}`, `"model_version":${JSON.stringify(response.modelVersion)}`];
  if (response.id) parts.unshift(`"id":${JSON.stringify(response.id)}`);
  for (const { name, tensor } of response.outputs) {
    const data = encodeJsonData(tensor);
    parts.push(`${JSON.stringify(name)}:${tensor.data.length === 1 ? data.slice(1, -1) : data}`);
  }
  return `{${parts.join(',')}}`;
}
