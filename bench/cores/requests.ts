/**
 * The requests bench:cores sends: INPUT0 FP32 [1,16] to an identity model as HTTP binary tensors, HTTP JSON
 * (the bytes bench:http sends) or a gRPC ModelInfer (as bench:grpc sends it); each as load-generator bytes, and
 * one checked call (OUTPUT0 = INPUT0) per model and protocol before the load.
 */
import * as grpc from '@grpc/grpc-js';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { post, rawRequest, type Payload } from '../harness/kserve';
import type { LoadSpec } from '../harness/loadgen';
import { buildPayload, checkResponse, inputValues } from '../http/payloads';

export type Protocol = 'binary' | 'json' | 'grpc';
export const PROTOCOLS: readonly Protocol[] = ['binary', 'json', 'grpc'];
export const PROTOCOL_LABELS: Record<Protocol, string> = { binary: 'HTTP binary', json: 'HTTP JSON', grpc: 'gRPC' };

/** The server's ports, per transport. */
export interface Ports {
  http: number;
  grpc: number;
}

const inferDef = loadProtos('number').inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const INPUT = new Float32Array(inputValues());

function httpPayload(protocol: 'binary' | 'json', model: string): Payload {
  return { ...buildPayload(protocol), path: `/v2/models/${model}/infer` };
}

function grpcRequest(model: string): ModelInferRequestMessage {
  const inputs = [{ name: 'INPUT0', datatype: 'FP32', shape: [1, INPUT.length] }];
  return { model_name: model, id: '', inputs, raw_input_contents: [Buffer.from(INPUT.buffer)] };
}

/** Where and what the load generator sends; the plan (concurrency, window) is the caller's. */
export type LoadTarget = Pick<LoadSpec, 'port' | 'request' | 'grpcMethod'>;

/** What the load generator sends for `model` over `protocol`. */
export function loadTarget(protocol: Protocol, model: string, ports: Ports): LoadTarget {
  if (protocol === 'grpc') {
    return { port: ports.grpc, grpcMethod: inferDef.path, request: Buffer.from(inferDef.requestSerialize(grpcRequest(model))).toString('base64') };
  }
  return { port: ports.http, request: rawRequest(httpPayload(protocol, model), ports.http).toString('base64') };
}

/** One request of `model` over `protocol`; throws unless OUTPUT0 comes back equal to INPUT0. */
export async function verify(protocol: Protocol, model: string, ports: Ports): Promise<void> {
  if (protocol !== 'grpc') {
    const problem = checkResponse(protocol, await post(ports.http, httpPayload(protocol, model)));
    if (problem) throw new Error(`${model} over ${PROTOCOL_LABELS[protocol]}: ${problem}`);
    return;
  }
  const client = new grpc.Client(`127.0.0.1:${ports.grpc}`, grpc.credentials.createInsecure());
  const res = await new Promise<ModelInferResponseMessage | undefined>((resolve, reject) => {
    client.makeUnaryRequest(inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, grpcRequest(model), (err, r) => {
      client.close();
      if (err) reject(new Error(`${model} over gRPC: ${err.code} ${err.details}`));
      else resolve(r);
    });
  });
  const out = res?.raw_output_contents[0];
  if (res?.outputs[0]?.name !== 'OUTPUT0' || out === undefined || !Buffer.from(out).equals(Buffer.from(INPUT.buffer))) {
    throw new Error(`${model} over gRPC: OUTPUT0 != INPUT0 in ${JSON.stringify(res?.outputs)}`);
  }
}
