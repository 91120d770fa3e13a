/**
 * KServe v2 infer requests over HTTP (the binary tensor format), their raw bytes for the load generator, and a
 * reader for the answers, used to check each server once before it is measured.
 */
import * as http from 'node:http';

/** One input: its bytes in the binary section. */
export interface BinaryInput {
  name: string;
  datatype: 'FP32' | 'BYTES';
  shape: number[];
  bytes: Buffer;
}

/** A request body and the extra headers it needs. */
export interface Payload {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
}

/** Builds an infer request with every input in the binary section; `binaryOutputs` are asked for in binary. */
export function binaryRequest(model: string, inputs: BinaryInput[], binaryOutputs: string[] = []): Payload {
  const header: Record<string, unknown> = {
    inputs: inputs.map((i) => ({ name: i.name, datatype: i.datatype, shape: i.shape, parameters: { binary_data_size: i.bytes.length } })),
  };
  if (binaryOutputs.length > 0) header.outputs = binaryOutputs.map((name) => ({ name, parameters: { binary_data: true } }));
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  return {
    path: `/v2/models/${model}/infer`,
    body: Buffer.concat([head, ...inputs.map((i) => i.bytes)]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length) },
  };
}

/** FP32 values as little-endian bytes. */
export function fp32Bytes(values: Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/** One BYTES element in the binary format: a 4-byte little-endian length, then the bytes. */
export function bytesElement(data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32LE(data.length, 0);
  return Buffer.concat([len, data]);
}

/** Deterministic FP32 values in [-1, 1], exact in FP32 (multiples of 1/8). */
export function testValues(n: number, seed = 0): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (((i * 7 + seed * 13) % 17) - 8) / 8;
  return out;
}

/** The raw HTTP/1.1 request bytes, sent as they are on every request of a run. */
export function rawRequest(payload: Payload, port: number): Buffer {
  const lines = [`POST ${payload.path} HTTP/1.1`, `Host: 127.0.0.1:${port}`];
  for (const [k, v] of Object.entries(payload.headers)) lines.push(`${k}: ${v}`);
  lines.push(`Content-Length: ${payload.body.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload.body]);
}

/** An output as read from an answer: JSON `data`, or the bytes of its binary section. */
export interface OutputRead {
  name: string;
  datatype: string;
  shape: number[];
  data?: unknown[];
  binary?: Buffer;
}

/** An answer as node:http received it. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Sends one request through node:http and resolves with the whole answer, whatever its status. */
export function post(port: number, payload: Payload): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: payload.path, method: 'POST', headers: { ...payload.headers, 'Content-Length': payload.body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      },
    );
    req.on('error', reject);
    req.end(payload.body);
  });
}

/** Sends one request; resolves with the outputs, or rejects with the status and body. */
export async function inferOnce(port: number, payload: Payload): Promise<Map<string, OutputRead>> {
  const a = await post(port, payload);
  if (a.status !== 200) throw new Error(`${payload.path}: HTTP ${a.status}: ${a.body.toString('utf8', 0, 300)}`);
  return readOutputs(a.headers, a.body);
}

/** The outputs of a 200 answer: JSON `data`, or the bytes of their binary section. */
export function readOutputs(headers: http.IncomingHttpHeaders, body: Buffer): Map<string, OutputRead> {
  const ihcl = headers['inference-header-content-length'];
  const headLength = ihcl === undefined ? body.length : Number(ihcl);
  const header = JSON.parse(body.toString('utf8', 0, headLength)) as {
    outputs?: { name: string; datatype: string; shape: number[]; data?: unknown[]; parameters?: { binary_data_size?: number } }[];
  };
  const out = new Map<string, OutputRead>();
  let offset = headLength;
  for (const o of header.outputs ?? []) {
    const size = o.parameters?.binary_data_size;
    const read: OutputRead = { name: o.name, datatype: o.datatype, shape: o.shape, data: o.data };
    if (size !== undefined) {
      read.binary = Buffer.from(body.subarray(offset, offset + size));
      offset += size;
    }
    out.set(o.name, read);
  }
  return out;
}

/** The FP32 values of a binary output. */
export function fp32Of(o: OutputRead | undefined): Float32Array {
  if (!o?.binary) throw new Error(`output ${o?.name ?? '?'} has no binary data`);
  return new Float32Array(o.binary.buffer, o.binary.byteOffset, o.binary.byteLength / 4);
}

/** A model's cumulative counts from `GET /v2/models/<model>/stats`: requests (rows) and executions. */
export async function modelCounts(port: number, model: string): Promise<{ inferences: number; executions: number }> {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/stats`);
  if (!res.ok) throw new Error(`${model} stats: HTTP ${res.status}`);
  const body = (await res.json()) as { model_stats?: { inference_count?: number; execution_count?: number }[] };
  const s = body.model_stats?.[0];
  return { inferences: Number(s?.inference_count ?? 0), executions: Number(s?.execution_count ?? 0) };
}
