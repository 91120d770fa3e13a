/**
 * The KServe v2 infer requests the HTTP benchmark sends, and a check of the answers.
 *
 * Both servers get byte-identical requests. Values are small multiples of 1/4, exact in FP32, so the JSON
 * text of the answer is the same length whichever server produces it.
 */
import { readOutputs, type Answer, type Payload } from '../harness/kserve';

export type Mode = 'binary' | 'json';

export const MODES: readonly Mode[] = ['binary', 'json'];
export const MODEL = 'identity_fp32';
export const ELEMENTS = 16;
export const INFER_PATH = `/v2/models/${MODEL}/infer`;

/** The input values, FP32-exact. */
export function inputValues(n = ELEMENTS): number[] {
  return Array.from({ length: n }, (_, i) => (i - n / 2) * 0.25);
}

/** INPUT0 FP32 [1, n]: *binary*, binary input and `binary_data: true` on OUTPUT0; *json*, `data` in, `data` out. */
export function buildPayload(mode: Mode, n = ELEMENTS): Payload {
  const values = inputValues(n);
  if (mode === 'json') {
    const header = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n], data: values }] };
    return { path: INFER_PATH, body: Buffer.from(JSON.stringify(header), 'utf8'), headers: { 'Content-Type': 'application/json' } };
  }
  const blob = Buffer.from(new Float32Array(values).buffer);
  const header = {
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, n], parameters: { binary_data_size: blob.length } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  };
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  return {
    path: INFER_PATH,
    body: Buffer.concat([head, blob]),
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length) },
  };
}

/**
 * Checks that an answer is 200 with OUTPUT0 = the input, in the format the mode asks for; returns a problem
 * or undefined.
 */
export function checkResponse(mode: Mode, answer: Answer, n = ELEMENTS): string | undefined {
  if (answer.status !== 200) return `HTTP ${answer.status}: ${answer.body.toString('utf8', 0, 300)}`;
  const want = inputValues(n);
  const ihcl = answer.headers['inference-header-content-length'];
  let out;
  try {
    out = readOutputs(answer.headers, answer.body).get('OUTPUT0');
  } catch (err) {
    return `unparsable JSON header: ${(err as Error).message}`;
  }
  if (!out) return 'no OUTPUT0 in the response';
  if (out.datatype !== 'FP32' || JSON.stringify(out.shape) !== JSON.stringify([1, n])) return `OUTPUT0 is ${out.datatype} ${JSON.stringify(out.shape)}`;
  let got: number[];
  if (mode === 'binary') {
    if (ihcl === undefined) return 'binary mode: no Inference-Header-Content-Length in the response';
    const bytes = out.binary;
    if (bytes?.length !== n * 4 || answer.body.length !== Number(ihcl) + bytes.length) return `binary mode: binary_data_size ${bytes?.length}, body ${answer.body.length} bytes`;
    got = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, n));
  } else {
    if (ihcl !== undefined || !Array.isArray(out.data)) return 'json mode: expected a JSON-only response with OUTPUT0.data';
    got = out.data as number[];
  }
  if (JSON.stringify(got) !== JSON.stringify(want)) return `OUTPUT0 ${JSON.stringify(got)} != INPUT0 ${JSON.stringify(want)}`;
  return undefined;
}
