import * as grpc from '@grpc/grpc-js';
import type { ParameterValue } from '../callable/callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import { GrpcStatus, TritonError } from '../base/errors';
import type { NamedTensor } from '../tensor/named-tensor';
import type { ModelMetadata } from '../protocol/model-metadata';
import { fromInferParameters, toInferParameters } from '../protocol/infer-parameter';
import type {
  ModelConfigResponseMessage,
  ModelInferRequestMessage,
  ModelInferResponseMessage,
  ModelMetadataResponseMessage,
  ModelRequestMessage,
  ModelStreamInferResponseMessage,
} from '../protocol/messages';
import { loadProtos } from '../protocol/protos';
import { decodeTensorContents } from '../protocol/tensor-contents';
import { decodeBinary, encodeBinary } from '../tensor/binary-codec';
import { isDataType } from '../tensor/dtype';
import { ClientError, abortedError } from './client-error';
import type { CallSettings, ClientInferRequest, ClientInferResponse, ClientStreamRequest, ClientStreamResponse, ClientTransport, StreamSettings } from './client-transport';
import { guardedStream, type WireStream } from './guarded-stream';

/** KServe v2 over gRPC (`inference.GRPCInferenceService`), tensors in `raw_input_contents`. */
export class GrpcClientTransport implements ClientTransport {
  private readonly client: grpc.Client;
  private readonly methods = loadProtos('number').inference;

  /** `address` is `host:port`; `credentials` are insecure or TLS (`grpcs://`). */
  constructor(
    readonly url: string,
    address: string,
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  ) {
    this.client = new grpc.Client(address, credentials, {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
  }

  async serverReady(settings: CallSettings): Promise<boolean> {
    return (await this.unary<object, { ready: boolean }>('ServerReady', {}, settings)).ready;
  }

  async modelReady(name: string, version: string, settings: CallSettings): Promise<boolean> {
    try {
      return (await this.unary<ModelRequestMessage, { ready: boolean }>('ModelReady', { name, version }, settings)).ready;
    } catch (err) {
      // Triton answers ready: false for a model it does not know; servers that answer INVALID_ARGUMENT instead mean the same.
      if (err instanceof ClientError && err.status === GrpcStatus.INVALID_ARGUMENT) return false;
      throw err;
    }
  }

  async modelMetadata(name: string, version: string, settings: CallSettings): Promise<ModelMetadata> {
    const m = await this.unary<ModelRequestMessage, ModelMetadataResponseMessage>('ModelMetadata', { name, version }, settings);
    const tensor = (t: ModelMetadataResponseMessage['inputs'][number]) => ({ name: t.name, datatype: t.datatype, shape: t.shape.map(Number) });
    return { name: m.name, versions: m.versions, platform: m.platform, inputs: m.inputs.map(tensor), outputs: m.outputs.map(tensor) };
  }

  async modelConfig(name: string, version: string, settings: CallSettings): Promise<ModelConfigJson> {
    const { config } = await this.unary<ModelRequestMessage, ModelConfigResponseMessage>('ModelConfig', { name, version }, settings);
    return withoutNulls(config ?? {}) as ModelConfigJson;
  }

  async modelStatistics(name: string, version: string, settings: CallSettings): Promise<unknown> {
    return await this.unary<ModelRequestMessage, unknown>('ModelStatistics', { name, version }, settings);
  }

  async infer(request: ClientInferRequest, settings: CallSettings): Promise<ClientInferResponse> {
    const res = await this.unary<ModelInferRequestMessage, ModelInferResponseMessage>('ModelInfer', requestMessage(request), settings);
    const parameters = responseParameters(res);
    return { id: res.id, modelName: res.model_name, modelVersion: res.model_version, outputs: decodeOutputs(res), ...(parameters && { parameters }) };
  }

  stream(request: ClientStreamRequest, settings: StreamSettings): AsyncIterable<ClientStreamResponse> {
    return this.streamResponses(request, settings);
  }

  close(): void {
    this.client.close();
  }

  /**
   * One request on its own ModelStreamInfer call, half-closed at once. It asks for the empty final response,
   * so the last response is always marked even when the model ends its stream without a payload; after it
   * the call is read to its end (which follows at once) instead of cancelled, so the server finishes the
   * request on its own.
   */
  private async *streamResponses(request: ClientStreamRequest, settings: StreamSettings): AsyncGenerator<ClientStreamResponse, void, undefined> {
    const msg = requestMessage(request, { triton_enable_empty_final_response: true });
    let final = false;
    for await (const m of guardedStream(() => this.openStream(msg, settings), settings, `stream of model '${request.modelName}'`)) {
      if (final) continue;
      if (m.error_message) throw new ClientError('INTERNAL', m.error_message);
      const res = m.infer_response;
      if (!res) throw new ClientError('INTERNAL', 'malformed answer from the server: a stream response with neither a response nor an error');
      // As Triton's C++ client: a response without the flag is final.
      const flag = res.parameters?.triton_final_response;
      final = flag === undefined || flag.bool_param === true;
      if (res.outputs.length > 0) {
        const parameters = responseParameters(res);
        yield { id: res.id, outputs: decodeOutputs(res), final, ...(parameters && { parameters }) };
      }
    }
  }

  private openStream(msg: ModelInferRequestMessage, settings: StreamSettings): WireStream<ModelStreamInferResponseMessage> {
    const def = this.methods.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
    const call = this.client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, metadataOf(settings.headers));
    // The call's async iterator reads as the loop pulls: grpc-js buffers up to the stream's high-water mark and
    // then stops reading, so HTTP/2 flow control holds a slow consumer's responses on the server.
    const messages = call[Symbol.asyncIterator]() as AsyncIterator<ModelStreamInferResponseMessage, undefined>;
    call.write(msg);
    call.end();
    return {
      next: () =>
        messages.next().catch((err: unknown) => {
          const e = err as Partial<grpc.ServiceError>;
          throw ClientError.fromGrpc(e.code ?? GrpcStatus.UNAVAILABLE, e.details ?? String(e.message ?? err), err);
        }),
      cancel: () => call.cancel(),
    };
  }

  private unary<Req, Res>(rpc: string, request: Req, settings: CallSettings): Promise<Res> {
    const def = this.methods[rpc] as grpc.MethodDefinition<Req, Res>;
    const { signal } = settings;
    if (signal?.aborted) return Promise.reject(abortedError(signal));
    const metadata = metadataOf(settings.headers);
    return new Promise<Res>((resolve, reject) => {
      let aborted = false;
      const onAbort = (): void => {
        aborted = true;
        call.cancel();
      };
      const call = this.client.makeUnaryRequest(
        def.path,
        def.requestSerialize,
        def.responseDeserialize,
        request,
        metadata,
        { deadline: Date.now() + settings.timeoutMs },
        (err, value) => {
          signal?.removeEventListener('abort', onAbort);
          if (aborted) reject(abortedError(signal as AbortSignal));
          else if (err) reject(ClientError.fromGrpc(err.code, err.details, err));
          else resolve(value as Res);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function metadataOf(headers: Readonly<Record<string, string>> | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers ?? {})) metadata.set(k, v);
  return metadata;
}

/** A ModelInferRequest with every input in `raw_input_contents`; `extra` parameters on top of the request's. */
function requestMessage(request: ClientInferRequest, extra?: Readonly<Record<string, ParameterValue>>): ModelInferRequestMessage {
  return {
    model_name: request.modelName,
    model_version: request.modelVersion,
    id: request.id ?? '',
    parameters: toInferParameters(extra ? { ...request.parameters, ...extra } : (request.parameters ?? {})),
    inputs: request.inputs.map(({ name, tensor }) => ({ name, datatype: tensor.dtype, shape: tensor.shape as number[] })),
    outputs: (request.outputs ?? []).map((name) => ({ name })),
    raw_input_contents: request.inputs.map(({ tensor }) => encodeBinary(tensor)),
  };
}

/** The outputs of a ModelInferResponse, from `raw_output_contents` or, failing that, typed `contents`. */
function decodeOutputs(res: ModelInferResponseMessage): NamedTensor[] {
  try {
    return res.outputs.map((o, i) => {
      const what = `output '${o.name}'`;
      const dtype = o.datatype;
      if (!isDataType(dtype)) throw new TritonError('INVALID_ARGUMENT', `${what}: unknown datatype ${dtype}`);
      const shape = o.shape.map(Number);
      const raw = res.raw_output_contents[i];
      const data = raw === undefined && o.contents ? decodeTensorContents(dtype, shape, o.contents, what) : decodeBinary(dtype, shape, raw ?? new Uint8Array(0), what);
      return { name: o.name, tensor: { dtype, shape, data } };
    });
  } catch (err) {
    throw new ClientError('INTERNAL', `malformed answer from the server: ${(err as Error).message}`, undefined, { cause: err });
  }
}

/** A response's parameters as plain values, without the `triton_*` ones the protocol uses; undefined when none are left. */
function responseParameters(res: ModelInferResponseMessage): Record<string, ParameterValue> | undefined {
  if (!res.parameters) return undefined;
  let out: Record<string, ParameterValue> | undefined;
  try {
    for (const [key, value] of Object.entries(fromInferParameters(res.parameters, 'response'))) if (!key.startsWith('triton_')) (out ??= {})[key] = value;
  } catch (err) {
    throw new ClientError('INTERNAL', `malformed answer from the server: ${(err as Error).message}`, undefined, { cause: err });
  }
  return out;
}

/** Drops the nulls proto-loader puts for unset sub-messages, so the config reads like the HTTP JSON. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) out[k] = withoutNulls(v);
  return out;
}
