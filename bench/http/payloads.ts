/**
 * The KServe v2 infer requests the benchmark sends, and a check of the answers.
 *
 * Both servers get byte-identical requests. Values are small multiples of 1/4, exact in FP32, so the JSON
 * text of the answer is the same length whichever server produces it.
 */

export type Mode = 'binary' | 'json';

export const MODEL = 'identity_fp32';
export const ELEMENTS = 16;
export const INFER_PATH = `/v2/models/${MODEL}/infer`;

/** The input values, FP32-exact. */
export function inputValues(n = ELEMENTS): number[] {
  return Array.from({ length: n }, (_, i) => (i - n / 2) * 0.25);
}

/** A request body and the extra headers it needs. */
export interface Payload {
  mode: Mode;
  body: Buffer;
  headers: Record<string, string>;
}

export function buildPayload(mode: Mode, n = ELEMENTS): Payload {
  const values = inputValues(n);
  if (mode === 'json') {
    const header = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n], data: values }] };
    return { mode, body: Buffer.from(JSON.stringify(header), 'utf8'), headers: { 'Content-Type': 'application/json' } };
  }
  const blob = Buffer.from(new Float32Array(values).buffer);
  const header = {
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n], parameters: { binary_data_size: blob.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  };
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  return {
    mode,
    body: Buffer.concat([head, blob]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length) },
  };
}

/** The raw HTTP/1.1 request bytes, sent as they are on every request of a run. */
export function rawRequest(payload: Payload, port: number): Buffer {
  const lines = [`POST ${INFER_PATH} HTTP/1.1`, `Host: 127.0.0.1:${port}`];
  for (const [k, v] of Object.entries(payload.headers)) lines.push(`${k}: ${v}`);
  lines.push(`Content-Length: ${payload.body.length}`, '', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), payload.body]);
}

/**
 * Checks that a response body is OUTPUT0 = the input, in the format the mode asks for; returns a problem
 * or undefined.
 */
export function checkResponse(mode: Mode, headers: Record<string, string | string[] | undefined>, body: Buffer, n = ELEMENTS): string | undefined {
  const want = inputValues(n);
  const ihcl = headers['inference-header-content-length'];
  const headLength = ihcl === undefined ? body.length : Number(ihcl);
  let header: { outputs?: { name?: string; datatype?: string; shape?: number[]; data?: number[]; parameters?: { binary_data_size?: number } }[] };
  try {
    header = JSON.parse(body.toString('utf8', 0, headLength));
  } catch (err) {
    return `unparsable JSON header: ${(err as Error).message}`;
  }
  const out = header.outputs?.find((o) => o.name === 'OUTPUT0');
  if (!out) return 'no OUTPUT0 in the response';
  if (out.datatype !== 'FP32' || JSON.stringify(out.shape) !== JSON.stringify([1, n])) return `OUTPUT0 is ${out.datatype} ${JSON.stringify(out.shape)}`;
  let got: number[];
  if (mode === 'binary') {
    if (ihcl === undefined) return 'binary mode: no Inference-Header-Content-Length in the response';
    const size = out.parameters?.binary_data_size;
    if (size !== n * 4 || body.length !== headLength + size) return `binary mode: binary_data_size ${size}, body ${body.length} bytes`;
    const copy = Buffer.from(body.subarray(headLength));
    got = Array.from(new Float32Array(copy.buffer, copy.byteOffset, n));
  } else {
    if (ihcl !== undefined || !Array.isArray(out.data)) return 'json mode: expected a JSON-only response with OUTPUT0.data';
    got = out.data;
  }
  if (JSON.stringify(got) !== JSON.stringify(want)) return `OUTPUT0 ${JSON.stringify(got)} != INPUT0 ${JSON.stringify(want)}`;
  return undefined;
}
