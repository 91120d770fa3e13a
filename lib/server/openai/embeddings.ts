import type * as http from 'node:http';
import type { Cancellation } from '../../base/cancellation';
import { TritonError } from '../../base/errors';
import type { NamedTensorSpec } from '../../config/tensor-spec';
import type { ModelView } from '../../model/model-view';
import { encodeJsonData } from '../../tensor/json-codec';
import { generateRequest } from '../http/generate';
import type { InferenceResponse } from '../../model/inference';
import type { InferCall } from '../infer-entry';
import type { ServerCore } from '../server-core';
import { PROMPT_TOKENS, reportedCount, TEXT_INPUT } from './generation';
import { invalidParam } from './openai-error';
import { embeddingsOf, type Body } from './openai-request';

/**
 * `POST /v1/embeddings` on `model`: a model with a BYTES text input (`text_input`, or its only BYTES input) and
 * an FP32 embedding output (its only FP32 output, or the one whose name says `embed`). Each text is one
 * inference request, all sent at once, so that the dynamic batcher batches them and a response cache serves
 * each text it has seen; the vectors are the model's, bit for bit.
 */
export async function handleEmbeddings(core: ServerCore, body: Body, res: http.ServerResponse, cancellation: Cancellation): Promise<void> {
  const name = body.model as string;
  const request = embeddingsOf(body);
  let output: NamedTensorSpec | undefined;
  const embed = (text: string): Promise<InferenceResponse> => {
    let response: InferenceResponse | undefined;
    const call: InferCall = {
      modelName: name,
      modelVersion: undefined,
      protocol: 'HTTP',
      unaryEndpoint: `model '${name}': embeddings`,
      decode: (model) => {
        const specs = embeddingSpecs(model);
        output = specs.output;
        return generateRequest({ [specs.input.name]: text }, model, cancellation);
      },
    };
    return core.inferAsync(call, (r) => void (response = r)).then(() => response as InferenceResponse);
  };
  const responses = await Promise.all(request.texts.map(embed));
  let promptTokens: number | undefined;
  const data = responses.map((response, index) => {
    const tensor = response.outputs.find((o) => o.name === output?.name)?.tensor;
    if (tensor?.dtype !== 'FP32') throw new TritonError('INFERENCE_FAILED', `model '${name}' returned no FP32 output '${output?.name ?? ''}'`);
    const vector = tensor.data as Float32Array;
    if (request.dimensions !== undefined && request.dimensions !== vector.length) {
      throw invalidParam('dimensions', `ModelView '${name}' returns ${vector.length} dimensions, not ${request.dimensions}.`, 'unsupported_value');
    }
    const tokens = reportedCount(response, PROMPT_TOKENS);
    if (tokens !== undefined) promptTokens = (promptTokens ?? 0) + tokens;
    // The float form is written as the KServe endpoints write FP32: the shortest text that reads back to the float.
    const embedding =
      request.encoding === 'base64'
        ? JSON.stringify(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64'))
        : encodeJsonData({ dtype: 'FP32', shape: [vector.length], data: vector });
    return `{"object":"embedding","index":${index},"embedding":${embedding}}`;
  });
  const usage = promptTokens === undefined ? '' : `,"usage":${JSON.stringify({ prompt_tokens: promptTokens, total_tokens: promptTokens })}`;
  const text = `{"object":"list","data":[${data.join(',')}],"model":${JSON.stringify(body.model)}${usage}}`;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The text input and embedding output of `model`, or a 400 saying what it lacks. */
function embeddingSpecs(model: ModelView): { input: NamedTensorSpec; output: NamedTensorSpec } {
  const texts = model.inputs.filter((s) => s.dtype === 'BYTES');
  const input = texts.find((s) => s.name === TEXT_INPUT) ?? (texts.length === 1 ? texts[0] : undefined);
  const floats = model.outputs.filter((s) => s.dtype === 'FP32');
  const output = floats.length === 1 ? floats[0] : floats.find((s) => /embed/i.test(s.name));
  if (!input || !output) {
    throw new TritonError('INVALID_ARGUMENT', `model '${model.name}' cannot make embeddings: it needs one BYTES text input (or '${TEXT_INPUT}') and one FP32 embedding output`);
  }
  return { input, output };
}
