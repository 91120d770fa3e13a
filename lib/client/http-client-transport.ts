import * as http from 'node:http';
import type { ParameterValue } from '../callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import { TritonError } from '../errors';
import type { NamedTensor } from '../model/inference';
import type { ModelMetadata } from '../model/model';
import { decodeBinary, encodeBinary } from '../tensor/binary-codec';
import { isDataType } from '../tensor/dtype';
import { decodeJsonData } from '../tensor/json-codec';
import { parseJson } from '../tensor/lossless-json';
import { ClientError } from './client-error';
import type { CallSettings, ClientInferRequest, ClientInferResponse, ClientTransport } from './client-transport';
import { httpError, httpExchange, type HttpAnswer } from './http-exchange';

/** KServe v2 over HTTP, with every tensor in the binary tensor extension (no JSON numbers on the wire). */
export class HttpClientTransport implements ClientTransport {
  private readonly agent = new http.Agent({ keepAlive: true });

  constructor(
    readonly url: string,
    private readonly base: URL,
  ) {}

  async serverReady(settings: CallSettings): Promise<boolean> {
    const answer = await this.get('/v2/health/ready', settings);
    return answer.status === 200;
  }

  async modelReady(name: string, version: string, settings: CallSettings): Promise<boolean> {
    const answer = await this.get(`${modelPath(name, version)}/ready`, settings);
    return answer.status === 200;
  }

  async modelMetadata(name: string, version: string, settings: CallSettings): Promise<ModelMetadata> {
    return json(await this.ok(this.get(modelPath(name, version), settings))) as ModelMetadata;
  }

  async modelConfig(name: string, version: string, settings: CallSettings): Promise<ModelConfigJson> {
    return json(await this.ok(this.get(`${modelPath(name, version)}/config`, settings))) as ModelConfigJson;
  }

  async infer(request: ClientInferRequest, settings: CallSettings): Promise<ClientInferResponse> {
    const blobs: Uint8Array[] = [];
    const inputs = request.inputs.map(({ name, tensor }) => {
      const blob = encodeBinary(tensor);
      blobs.push(blob);
      return `{"name":${JSON.stringify(name)},"datatype":"${tensor.dtype}","shape":[${tensor.shape.join(',')}],"parameters":{"binary_data_size":${blob.byteLength}}}`;
    });
    const params: Record<string, ParameterValue> = { ...request.parameters };
    let outputs = '';
    if (request.outputs) {
      outputs = `,"outputs":[${request.outputs.map((o) => `{"name":${JSON.stringify(o)},"parameters":{"binary_data":true}}`).join(',')}]`;
    } else {
      params.binary_data_output = true;
    }
    const id = request.id ? `"id":${JSON.stringify(request.id)},` : '';
    const head = Buffer.from(`{${id}"parameters":${parametersJson(params)},"inputs":[${inputs.join(',')}]${outputs}}`, 'utf8');
    const answer = await this.ok(
      httpExchange(
        this.agent,
        this.base,
        {
          method: 'POST',
          path: `${modelPath(request.modelName, request.modelVersion)}/infer`,
          headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': head.byteLength },
          body: [head, ...blobs],
        },
        settings,
      ),
    );
    return decodeInferAnswer(answer);
  }

  close(): void {
    this.agent.destroy();
  }

  private get(path: string, settings: CallSettings): Promise<HttpAnswer> {
    return httpExchange(this.agent, this.base, { method: 'GET', path }, settings);
  }

  private async ok(pending: Promise<HttpAnswer>): Promise<HttpAnswer> {
    const answer = await pending;
    if (answer.status !== 200) throw httpError(answer);
    return answer;
  }
}

function modelPath(name: string, version: string): string {
  return `/v2/models/${encodeURIComponent(name)}${version ? `/versions/${encodeURIComponent(version)}` : ''}`;
}

function json(answer: HttpAnswer): unknown {
  try {
    return parseJson(answer.body.toString('utf8'), 1000);
  } catch (err) {
    throw malformed(err);
  }
}

/** Request parameters as JSON; BigInt values are written as plain integers. */
function parametersJson(params: Readonly<Record<string, ParameterValue>>): string {
  const parts = Object.entries(params).map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`);
  return `{${parts.join(',')}}`;
}

interface OutputHeader {
  name: string;
  datatype: unknown;
  shape: unknown[];
  parameters?: { binary_data_size?: unknown };
  data?: unknown;
}

/** Splits an infer answer into its JSON header and binary blobs, one per output with `binary_data_size`. */
function decodeInferAnswer(answer: HttpAnswer): ClientInferResponse {
  const { body } = answer;
  const ihcl = answer.headers['inference-header-content-length'];
  const jsonLength = ihcl === undefined ? body.length : Number(ihcl);
  try {
    const header = parseJson(body.toString('utf8', 0, jsonLength), 1000) as {
      id?: string;
      model_name: string;
      model_version: string;
      outputs?: OutputHeader[];
    };
    let offset = jsonLength;
    const outputs: NamedTensor[] = (header.outputs ?? []).map((o) => {
      const what = `output '${o.name}'`;
      const dtype = o.datatype;
      if (!isDataType(dtype)) throw new TritonError('INVALID_ARGUMENT', `${what}: unknown datatype ${String(dtype)}`);
      const shape = o.shape.map((d) => Number(d));
      const size = o.parameters?.binary_data_size;
      if (size === undefined) return { name: o.name, tensor: { dtype, shape, data: decodeJsonData(dtype, shape, o.data, what) } };
      const end = offset + Number(size);
      if (end > body.length) throw new TritonError('INVALID_ARGUMENT', `${what}: the answer is ${end - body.length} bytes short`);
      const bytes = body.subarray(offset, end);
      offset = end;
      return { name: o.name, tensor: { dtype, shape, data: decodeBinary(dtype, shape, bytes, what) } };
    });
    return { id: header.id ?? '', modelName: header.model_name, modelVersion: header.model_version, outputs };
  } catch (err) {
    throw malformed(err);
  }
}

function malformed(err: unknown): ClientError {
  return new ClientError('INTERNAL', `malformed answer from the server: ${(err as Error).message}`, undefined, { cause: err });
}
