/**
 * The hot path's message codecs against @grpc/proto-loader's, in one process, alternating:
 *
 *   npm run build && node dist/bench/grpc/codecs.js
 *
 * ModelInferRequest decode and ModelInferResponse encode for identity_fp32 with 16 elements; prints ns per
 * operation (median of 5 runs each).
 */
import type * as grpc from '@grpc/grpc-js';
import { decodeModelInferRequest } from '../../lib/server/grpc/infer-request-decoder';
import { encodeModelInferResponse } from '../../lib/server/grpc/infer-response-encoder';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';

const def = loadProtos('string').inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const request = def.requestSerialize({
  model_name: 'identity_fp32',
  id: '17',
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }],
  raw_input_contents: [Buffer.from(new Float32Array(16).buffer)],
});
const response: ModelInferResponseMessage = {
  model_name: 'identity_fp32',
  model_version: '1',
  id: '17',
  outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1, 16] }],
  raw_output_contents: [new Uint8Array(64)],
};

function nsPerOp(fn: () => unknown, n = 100_000): number {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t) / n;
}

const cases: [string, () => unknown][] = [
  ['decode ModelInferRequest, proto-loader', () => def.requestDeserialize(request)],
  ['decode ModelInferRequest, direct', () => decodeModelInferRequest(request)],
  ['encode ModelInferResponse, proto-loader', () => def.responseSerialize(response)],
  ['encode ModelInferResponse, direct', () => encodeModelInferResponse(response)],
];
for (const [, fn] of cases) nsPerOp(fn, 20_000);
const runs = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let r = 0; r < 5; r++) for (const [name, fn] of cases) runs.get(name)?.push(nsPerOp(fn));
for (const [name, xs] of runs) {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(`${name.padEnd(42)} ${Math.round(sorted[2] as number)} ns/op`);
}
