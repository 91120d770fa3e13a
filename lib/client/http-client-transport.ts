import * as http from 'node:http';
import * as https from 'node:https';
import type { ClientTlsOptions } from './client-tls';
import type { ParameterValue } from '../callable/callable';
import type { ModelConfigJson } from '../config/triton-model-config';
import { invalidArgument } from '../base/errors';
import type { NamedTensor } from '../tensor/named-tensor';
import { parametersJson } from '../protocol/infer-parameter';
import type { ModelMetadata } from '../protocol/model-metadata';
import { decodeBinary, encodeBinary } from '../tensor/binary-codec';
import { DTYPES, isDataType } from '../tensor/dtype';
import { decodeJsonData, encodeJsonData } from '../tensor/json-codec';
import { parseJson } from '../tensor/lossless-json';
import { ClientError } from './client-error';
import type {
  CallSettings,
  ClientInferRequest,
  ClientInferResponse,
  ClientStreamRequest,
  ClientStreamResponse,
  ClientTransport,
  OutputSpec,
  StreamSettings,
} from './client-transport';
import { guardedStream, type WireStream } from './guarded-stream';
import { httpError, httpExchange, requestFor, type HttpAnswer } from './http-exchange';
import { serverSentEvents } from './server-sent-events';

/** KServe v2 over HTTP, with every tensor in the binary tensor extension (no JSON numbers on the wire). */
export class HttpClientTransport implements ClientTransport {
  private readonly agent: http.Agent;

  /** `tls` applies to `https:` URLs: the CA to trust and, for mutual TLS, the client certificate and key. */
  constructor(
    readonly url: string,
    private readonly base: URL,
    tls: ClientTlsOptions = {},
  ) {
    this.agent = base.protocol === 'https:' ? new https.Agent({ keepAlive: true, ca: tls.ca, cert: tls.cert, key: tls.key }) : new http.Agent({ keepAlive: true });
  }

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

  async modelStatistics(name: string, version: string, settings: CallSettings): Promise<unknown> {
    return json(await this.ok(this.get(`${modelPath(name, version)}/stats`, settings)));
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

  stream(request: ClientStreamRequest, settings: StreamSettings): AsyncIterable<ClientStreamResponse> {
    return this.streamResponses(request, settings);
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * One request to the generate extension's `/generate_stream`: its SSE events become responses. SSE carries
   * no final mark, so a decoupled model's responses are never marked final; the iteration ends with the body.
   */
  private async *streamResponses(request: ClientStreamRequest, settings: StreamSettings): AsyncGenerator<ClientStreamResponse, void, undefined> {
    const body = generateBody(request);
    const path = `${modelPath(request.modelName, request.modelVersion)}/generate_stream`;
    for await (const data of guardedStream(() => this.openEvents(path, body, settings), settings, `stream of model '${request.modelName}'`)) {
      yield decodeGenerateEvent(data, request.outputSpecs, !request.decoupled);
    }
  }

  /** Posts the body and reads the answer's SSE events; a status other than 200 fails with the server's message. */
  private openEvents(path: string, body: Buffer, settings: StreamSettings): WireStream<string> {
    const { base } = this;
    const req = requestFor(this.base)({
      agent: this.agent,
      protocol: base.protocol,
      hostname: base.hostname.replace(/^\[|\]$/g, ''),
      port: base.port,
      method: 'POST',
      path,
      headers: { ...settings.headers, 'Content-Type': 'application/json', Accept: 'text/event-stream', 'Content-Length': body.byteLength },
    });
    const lost = (err: unknown): ClientError =>
      err instanceof ClientError ? err : new ClientError('UNAVAILABLE', `connection to ${base.host} lost: ${(err as Error).message}`, undefined, { cause: err });
    const response = new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on('response', resolve);
      req.on('error', (err) => reject(new ClientError('UNAVAILABLE', `connection to ${base.host} failed: ${err.message}`, undefined, { cause: err })));
    });
    response.catch(() => undefined); // read by the first next(); a cancel before it must not leave a rejection unhandled
    req.end(body);
    let events: AsyncIterator<string, void> | undefined;
    return {
      next: async () => {
        try {
          if (!events) {
            const res = await response;
            const type = res.headers['content-type'] ?? '';
            if (res.statusCode !== 200) throw httpError({ status: res.statusCode ?? 0, headers: res.headers, body: await readAll(res) });
            if (!type.startsWith('text/event-stream')) throw new ClientError('INTERNAL', `malformed answer from the server: expected text/event-stream, got '${type}'`);
            events = serverSentEvents(res)[Symbol.asyncIterator]();
          }
          const next = await events.next();
          return next.done ? { done: true, value: undefined } : next;
        } catch (err) {
          throw lost(err);
        }
      },
      cancel: () => req.destroy(),
    };
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

/**
 * A generate request body: each input by name with its values (BYTES as UTF-8 strings), the request parameters
 * under `parameters`. The server fits the values to the input's declared shape.
 */
function generateBody(request: ClientStreamRequest): Buffer {
  const parts: string[] = [];
  if (request.id) parts.push(`"id":${JSON.stringify(request.id)}`);
  for (const { name, tensor } of request.inputs) {
    if (DTYPES[tensor.dtype].json === 'binary-only') {
      throw new ClientError('INVALID_ARGUMENT', `input '${name}': ${tensor.dtype} values have no JSON form, which the HTTP generate extension needs; stream over grpc:// instead`);
    }
    parts.push(`${JSON.stringify(name)}:${encodeJsonData(tensor)}`);
  }
  if (request.parameters && Object.keys(request.parameters).length > 0) parts.push(`"parameters":${parametersJson(request.parameters)}`);
  return Buffer.from(`{${parts.join(',')}}`, 'utf8');
}

/**
 * One generate event as a response: each expected output's value (a scalar for one element, else an array)
 * becomes a tensor of its declared datatype, its shape fitted from the declared one. `{"error": ...}` fails.
 */
function decodeGenerateEvent(data: string, specs: readonly OutputSpec[], final: boolean): ClientStreamResponse {
  let event: Record<string, unknown>;
  try {
    const parsed = parseJson(data, 1000);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw invalidArgument('an SSE event is not a JSON object');
    event = parsed as Record<string, unknown>;
  } catch (err) {
    throw malformed(err);
  }
  if (typeof event.error === 'string' && !('model_name' in event)) throw new ClientError('INTERNAL', event.error);
  try {
    const outputs: NamedTensor[] = [];
    for (const spec of specs) {
      const value = event[spec.name];
      if (value === undefined) continue;
      const what = `output '${spec.name}'`;
      const dtype = spec.datatype;
      if (!isDataType(dtype)) throw invalidArgument(`${what}: unknown datatype ${dtype}`);
      const flat = Array.isArray(value) ? (value as unknown[]).flat(Infinity) : [value];
      // Triton writes non-finite floats as null.
      const values = DTYPES[dtype].json === 'float' ? flat.map((v) => (v === null ? NaN : v)) : flat;
      const shape = fitShape(spec.shape, values.length, what);
      outputs.push({ name: spec.name, tensor: { dtype, shape, data: decodeJsonData(dtype, shape, values, what) } });
    }
    return { id: typeof event.id === 'string' ? event.id : '', outputs, final };
  } catch (err) {
    throw malformed(err);
  }
}

/** Fills the `-1` dims of a declared shape to hold `count` elements: the last one takes them, any others are 1. */
function fitShape(shape: readonly number[], count: number, what: string): number[] {
  const last = shape.lastIndexOf(-1);
  const fixed = shape.reduce((n, d) => (d === -1 ? n : n * d), 1);
  const rest = last < 0 ? 1 : fixed === 0 ? 0 : count / fixed;
  const fitted = shape.map((d, i) => (d !== -1 ? d : i === last ? rest : 1));
  if (!Number.isInteger(rest) || fitted.reduce((n, d) => n * d, 1) !== count) {
    throw invalidArgument(`${what}: ${count} value(s) do not fit shape [${shape.join(',')}]`);
  }
  return fitted;
}

/** Reads a whole answer body. */
async function readAll(res: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
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
      parameters?: Record<string, ParameterValue>;
      outputs?: OutputHeader[];
    };
    let offset = jsonLength;
    const outputs: NamedTensor[] = (header.outputs ?? []).map((o) => {
      const what = `output '${o.name}'`;
      const dtype = o.datatype;
      if (!isDataType(dtype)) throw invalidArgument(`${what}: unknown datatype ${String(dtype)}`);
      const shape = o.shape.map((d) => Number(d));
      const size = o.parameters?.binary_data_size;
      if (size === undefined) return { name: o.name, tensor: { dtype, shape, data: decodeJsonData(dtype, shape, o.data, what) } };
      const end = offset + Number(size);
      if (end > body.length) throw invalidArgument(`${what}: the answer is ${end - body.length} bytes short`);
      const bytes = body.subarray(offset, end);
      offset = end;
      return { name: o.name, tensor: { dtype, shape, data: decodeBinary(dtype, shape, bytes, what) } };
    });
    const parameters = isParameterObject(header.parameters) ? header.parameters : undefined;
    return { id: header.id ?? '', modelName: header.model_name, modelVersion: header.model_version, outputs, ...(parameters && { parameters }) };
  } catch (err) {
    throw malformed(err);
  }
}

function isParameterObject(value: unknown): value is Record<string, ParameterValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length > 0;
}

function malformed(err: unknown): ClientError {
  return new ClientError('INTERNAL', `malformed answer from the server: ${(err as Error).message}`, undefined, { cause: err });
}
