import * as http2 from 'node:http2';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import type { InferParameterMessage, ModelInferRequestMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import { loadProtos } from '../../lib/protocol/protos';
import { INFER_METHOD, INFER_PATH, Rng, expectGrpcServes, preview, rawModelInfer, startServer, suiteSeed, suiteTitle, type ChildServer } from './helpers';

// ModelInfer calls whose message is arbitrary bytes (a passthrough serializer): mutated valid encodings, truncated
// varints, wrong wire types, huge lengths. A malformed message is the client's mistake: never INTERNAL or UNKNOWN.
// Failures print the seed and the case; ROBUSTNESS_SEED=<n> runs another seed.

const SEED = suiteSeed(0x6770c);
const CASES = 2000;
const CHECK_EVERY = 100;
/** A call still unanswered after this long is a hang (a failure, never a timing measurement). */
const HANG_MS = 20_000;

const MODELS = ['add_sub', 'identity_bytes', 'double_int64'] as const;
type ModelName = (typeof MODELS)[number];

let server: ChildServer | undefined;
let client: grpc.Client | undefined;

async function connect(): Promise<{ server: ChildServer; client: grpc.Client }> {
  if (!server || server.exited() !== undefined || !client) {
    client?.close();
    server = await startServer();
    client = new grpc.Client(`127.0.0.1:${server.grpc}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': -1 });
  }
  return { server, client };
}

afterAll(async () => {
  client?.close();
  await server?.kill();
});

// ---- valid messages and their mutations ------------------------------------------------------------

function lengthPrefixed(words: Buffer[]): Buffer {
  return Buffer.concat(
    words.flatMap((w) => {
      const p = Buffer.alloc(4);
      p.writeUInt32LE(w.length);
      return [p, w];
    }),
  );
}

function validMessage(model: ModelName, r: Rng): ModelInferRequestMessage {
  const typed = r.chance(0.3);
  const msg: ModelInferRequestMessage = { model_name: model, id: r.chance(0.5) ? `id-${r.int(1000)}` : '', inputs: [], raw_input_contents: [] };
  if (r.chance(0.3)) msg.model_version = '1';
  const raw = msg.raw_input_contents as Uint8Array[];
  if (model === 'add_sub') {
    for (const name of ['INPUT0', 'INPUT1']) {
      const values = Array.from({ length: 4 }, () => r.int(100));
      msg.inputs.push({ name, datatype: 'FP32', shape: [1, 4], ...(typed ? { contents: { fp32_contents: values } } : {}) });
      if (!typed) raw.push(Buffer.from(Float32Array.from(values).buffer));
    }
  } else if (model === 'identity_bytes') {
    const words = [Buffer.from('a\u00e9'), Buffer.alloc(0), r.bytes(r.int(6))];
    msg.inputs.push({ name: 'INPUT0', datatype: 'BYTES', shape: [1, 3], ...(typed ? { contents: { bytes_contents: words } } : {}) });
    if (!typed) raw.push(lengthPrefixed(words));
  } else {
    const values = [BigInt(r.int(1e6)), -7n];
    msg.inputs.push({ name: 'INPUT0', datatype: 'INT64', shape: [1, 2], ...(typed ? { contents: { int64_contents: values.map(String) } } : {}) });
    if (!typed) raw.push(Buffer.from(BigInt64Array.from(values).buffer));
  }
  if (r.chance(0.3)) msg.outputs = [{ name: 'OUTPUT0', parameters: r.chance(0.5) ? { classification: { int64_param: 1 } } : {} }];
  if (r.chance(0.3)) msg.parameters = { priority: { uint64_param: 1 }, tag: { string_param: 'x' } };
  return msg;
}

const INT64_EDGES = ['-1', '0', '1', '-9223372036854775808', '9223372036854775807', '9007199254740993', '4294967296', '2147483648', '4611686018427387904'];

function randomParameter(r: Rng): InferParameterMessage {
  switch (r.int(6)) {
    case 0:
      return { bool_param: r.chance(0.5) };
    case 1:
      return { int64_param: r.pick(INT64_EDGES) };
    case 2:
      return { uint64_param: r.pick(['0', '1', '18446744073709551615', '9223372036854775808']) };
    case 3:
      return { double_param: r.pick([0.5, -1, 1e308, Number.NaN, Infinity, -0]) };
    case 4:
      return { string_param: r.pick(['', 'x', '\u65e5', '1', '-1', 'true']) };
    default:
      return {};
  }
}

const PARAMETER_KEYS = ['priority', 'timeout', 'sequence_id', 'sequence_start', 'binary_data_output', 'triton_x', 'triton_enable_empty_final_response', 'classification', 'shared_memory_region', 'shared_memory_byte_size', 'shared_memory_offset', 'tag', '__proto__', ''];

/** One change to the message that proto-loader can still encode: wrong types, shapes, sizes, names, parameters. */
function mutateMessage(msg: ModelInferRequestMessage, r: Rng): string {
  const input = msg.inputs[r.int(msg.inputs.length)];
  const raw = msg.raw_input_contents as Uint8Array[];
  switch (r.int(12)) {
    case 0: {
      const shape = r.pick<(number | string)[]>([[], [-1, 4], [1, -4], ['9223372036854775807'], ['-9223372036854775808'], [1, '4611686018427387904'], [2147483648, 2147483648], [0], [1, 0], [1, 4, 1], ['9007199254740993'], new Array<number>(r.int(3000)).fill(1)]);
      if (input) input.shape = shape;
      return `shape [${shape.slice(0, 8).join(',')}${shape.length > 8 ? `,... (${shape.length} dims)` : ''}]`;
    }
    case 1: {
      const dtype = r.pick(['', 'FP8', 'fp32', 'BYTES', 'INT64', 'FP16', 'BF16', 'BOOL', 'TYPE_FP32', '\u65e5', 'FP32\u0000']);
      if (input) input.datatype = dtype;
      return `datatype ${JSON.stringify(dtype)}`;
    }
    case 2: {
      const name = r.pick(['', 'INPUT2', 'OUTPUT0', '__proto__', 'constructor', 'INPUT0']);
      if (input) input.name = name;
      return `input name ${JSON.stringify(name)}`;
    }
    case 3: {
      const i = r.int(raw.length + 1);
      const change = r.int(4);
      if (change === 0) raw.splice(i, 1);
      else if (change === 1) raw.push(r.bytes(r.int(40)));
      else if (raw[i]) raw[i] = (raw[i] as Buffer).subarray(0, r.int((raw[i] as Buffer).length));
      else raw.unshift(Buffer.alloc(0));
      return `raw_input_contents change ${change} at ${i}`;
    }
    case 4: {
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32LE(r.pick([0xffffffff, 0x80000000, 1000, 5]));
      const i = r.int(raw.length);
      if (raw[i]) raw[i] = Buffer.concat([prefix, raw[i] as Buffer]);
      return `length prefix ${prefix.toString('hex')} before raw entry ${i}`;
    }
    case 5: {
      // Typed contents in the wrong list, too many or too few, or beside raw contents.
      const contents = r.pick([
        { fp32_contents: [1, 2] },
        { int64_contents: INT64_EDGES },
        { uint64_contents: ['18446744073709551615'] },
        { bool_contents: [true, false, true, false] },
        { bytes_contents: [Buffer.from('x')] },
        { int_contents: [-1, 2147483647] },
        { uint_contents: [4294967295, 0, 1, 2] },
        { fp64_contents: [1e308, -0] },
        {},
      ]);
      if (input) input.contents = contents;
      return `contents ${JSON.stringify(contents)}`;
    }
    case 6: {
      const key = r.pick(PARAMETER_KEYS);
      const value = randomParameter(r);
      (msg.parameters ??= {})[key] = value;
      return `request parameter ${JSON.stringify(key)} = ${JSON.stringify(value)}`;
    }
    case 7: {
      const key = r.pick(PARAMETER_KEYS);
      const value = randomParameter(r);
      if (input) (input.parameters ??= {})[key] = value;
      return `input parameter ${JSON.stringify(key)} = ${JSON.stringify(value)}`;
    }
    case 8: {
      const name = r.pick(['OUTPUT0', 'OUTPUT1', 'OUTPUT9', '']);
      const key = r.pick(PARAMETER_KEYS);
      const value = randomParameter(r);
      (msg.outputs ??= []).push({ name, parameters: { [key]: value } });
      return `output ${JSON.stringify(name)} with ${JSON.stringify(key)} = ${JSON.stringify(value)}`;
    }
    case 9: {
      const model = r.pick(['', 'nope', 'add_sub', 'identity_bytes', '../add_sub', '%ZZ']);
      msg.model_name = model;
      msg.model_version = r.pick(['', '1', '2', '-1', '99999999999999999999', 'x']);
      return `model ${JSON.stringify(model)} version ${JSON.stringify(msg.model_version)}`;
    }
    case 10:
      if (input) msg.inputs.push({ ...input });
      return 'a duplicated input';
    default:
      msg.inputs.splice(r.int(msg.inputs.length + 1), 1);
      return 'an input removed';
  }
}

/** Malformed protobuf pieces: truncated varints, wrong wire types, huge lengths, groups, field number 0. */
const BAD_PIECES: readonly [string, Buffer][] = [
  ['a truncated varint', Buffer.from([0x08, 0xff])],
  ['an 11-byte varint', Buffer.from([0x08, ...new Array<number>(10).fill(0xff), 0x01])],
  ['model_name as a varint', Buffer.from([0x08, 0x01])],
  ['inputs as a varint', Buffer.from([0x28, 0x01])],
  ['inputs as fixed64', Buffer.from([0x29, 1, 2, 3, 4, 5, 6, 7, 8])],
  ['raw_input_contents of length 2^32-1', Buffer.from([0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f])],
  ['inputs of length 2^31', Buffer.from([0x2a, 0x80, 0x80, 0x80, 0x80, 0x08])],
  ['a length of 2^35', Buffer.from([0x3a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00])],
  ['a start group', Buffer.from([0x0b, 0x08, 0x01])],
  ['an end group', Buffer.from([0x0c])],
  ['wire type 6', Buffer.from([0x0e])],
  ['wire type 7', Buffer.from([0x0f, 0x00])],
  ['field number 0', Buffer.from([0x00, 0x00])],
  ['an input holding garbage', Buffer.from([0x2a, 0x03, 0xff, 0xff, 0xff])],
  ['an input with packed shape cut mid-varint', Buffer.from([0x2a, 0x04, 0x1a, 0x02, 0x01, 0x80])],
  ['contents with 3 bytes of packed fp32', Buffer.from([0x2a, 0x07, 0x2a, 0x05, 0x32, 0x03, 0x00, 0x00, 0x80])],
  ['a parameter map entry holding garbage', Buffer.from([0x22, 0x02, 0x12, 0x05])],
  ['an unknown fixed32 cut short', Buffer.from([0x7d, 0x01])],
  ['a field number of 2^29-1', Buffer.from([0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01])],
];

/** One change to the encoded bytes. */
function mutateBytes(bytes: Buffer, r: Rng): { bytes: Buffer; label: string } {
  const at = r.int(bytes.length + 1);
  switch (r.int(6)) {
    case 0:
      return { bytes: bytes.subarray(0, at), label: `truncated to ${at} bytes` };
    case 1: {
      const copy = Buffer.from(bytes);
      const n = 1 + r.int(4);
      for (let i = 0; i < n && copy.length > 0; i++) {
        const j = r.int(copy.length);
        copy[j] = (copy[j] as number) ^ (1 << r.int(8));
      }
      return { bytes: copy, label: `${n} bits flipped` };
    }
    case 2:
      return { bytes: Buffer.concat([bytes.subarray(0, at), r.bytes(1 + r.int(16)), bytes.subarray(at)]), label: `random bytes inserted at ${at}` };
    case 3: {
      const [what, piece] = r.pick(BAD_PIECES);
      return { bytes: r.chance(0.5) ? Buffer.concat([bytes, piece]) : Buffer.concat([piece, bytes]), label: what };
    }
    case 4: {
      const from = r.int(bytes.length);
      const chunk = bytes.subarray(from, from + 1 + r.int(32));
      return { bytes: Buffer.concat([bytes.subarray(0, at), chunk, bytes.subarray(at)]), label: `bytes ${from}+${chunk.length} repeated at ${at}` };
    }
    default:
      return { bytes: r.bytes(r.int(512)), label: 'random bytes' };
  }
}

function nextCase(r: Rng): { bytes: Buffer; label: string } {
  const model = r.pick(MODELS);
  const msg = validMessage(model, r);
  const labels: string[] = [];
  if (r.chance(0.6)) for (let i = 0, n = 1 + r.int(2); i < n; i++) labels.push(mutateMessage(msg, r));
  let bytes = INFER_METHOD.requestSerialize(msg);
  if (labels.length === 0 || r.chance(0.4)) {
    for (let i = 0, n = 1 + r.int(2); i < n; i++) {
      const m = mutateBytes(bytes, r);
      bytes = m.bytes;
      labels.push(m.label);
    }
  }
  return { bytes, label: `${model}: ${labels.join('; ')}` };
}

// ---- the suite ------------------------------------------------------------------------------------

/** Statuses a malformed message must never get: they say the server failed, not the client. */
const SERVER_FAULTS = new Set<number>([grpc.status.INTERNAL, grpc.status.UNKNOWN]);

function withHangGuard<T>(p: Promise<T>, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what()}: no status within ${HANG_MS} ms`)), HANG_MS)));
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

describe(suiteTitle('gRPC fuzz'), () => {
  it(`answers ${CASES} malformed ModelInfer messages (seed ${SEED}) without INTERNAL or UNKNOWN, and keeps serving right`, async () => {
    const r = new Rng(SEED);
    const verify = new Rng(SEED ^ 0x5eed);
    const codes = new Map<number, number>();
    for (let i = 0; i < CASES; i++) {
      const c = nextCase(r);
      const { server: s, client: cl } = await connect();
      const where = () => `seed ${SEED}, case ${i} (${c.label}); sent ${preview(c.bytes)}`;
      const answer = await withHangGuard(rawModelInfer(cl, c.bytes), where);
      codes.set(answer.code, (codes.get(answer.code) ?? 0) + 1);
      let problem: string | undefined;
      if (s.exited() !== undefined) problem = 'the server process ended';
      else if (SERVER_FAULTS.has(answer.code)) problem = `status ${grpc.status[answer.code]}: ${answer.details.slice(0, 300)}`;
      else if (answer.code === grpc.status.OK) {
        try {
          INFER_METHOD.responseDeserialize(answer.response as Buffer);
        } catch (err) {
          problem = `an OK answer that does not decode: ${(err as Error).message}`;
        }
      }
      if (problem) throw new Error(`${where()}: ${problem} (server process: ${await s.endAfterFailure()})`);
      if ((i + 1) % CHECK_EVERY === 0) await withHangGuard(expectGrpcServes(cl, verify), () => `seed ${SEED}, after case ${i}: a valid request`);
    }
    const { client: cl } = await connect();
    await withHangGuard(expectGrpcServes(cl, verify), () => `seed ${SEED}, after all cases: a valid request`);
    // The fuzz reached past the parser: some messages decoded and ran, most were refused.
    expect(codes.get(grpc.status.OK) ?? 0).toBeGreaterThan(0);
    expect(codes.get(grpc.status.INVALID_ARGUMENT) ?? 0).toBeGreaterThan(CASES / 2);
  });

});

describe(suiteTitle('gRPC fuzz: ModelStreamInfer'), () => {
  const STREAM_METHOD = loadProtos('number').inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
  const STREAMS = 40;

  /** Writes `messages` on one stream and half-closes; resolves with the responses and the final status. */
  function stream(cl: grpc.Client, messages: readonly Buffer[]): Promise<{ responses: ModelStreamInferResponseMessage[]; code: number; details: string }> {
    return new Promise((resolve) => {
      const call = cl.makeBidiStreamRequest<Buffer, Buffer>(STREAM_METHOD.path, (b) => b, (b) => b);
      const responses: ModelStreamInferResponseMessage[] = [];
      let code: number = grpc.status.OK;
      let details = '';
      call.on('data', (b: Buffer) => responses.push(STREAM_METHOD.responseDeserialize(b)));
      call.on('error', (err: grpc.ServiceError) => {
        code = err.code;
        details = err.details;
      });
      call.on('status', () => undefined);
      call.on('close', () => resolve({ responses, code, details }));
      for (const m of messages) call.write(m);
      call.end();
    });
  }

  it(`ends ${STREAMS} streams of valid and malformed messages with OK or INVALID_ARGUMENT, answering each request it read`, async () => {
    const seed = SEED + 2;
    const r = new Rng(seed);
    for (let i = 0; i < STREAMS; i++) {
      const cases = Array.from({ length: 1 + r.int(6) }, () => (r.chance(0.5) ? { bytes: INFER_METHOD.requestSerialize(validMessage(r.pick(MODELS), r)), label: 'valid' } : nextCase(r)));
      const { server: s, client: cl } = await connect();
      const where = () => `seed ${seed}, stream ${i} (${cases.map((c) => c.label).join(' | ')})`;
      const answer = await withHangGuard(stream(cl, cases.map((c) => c.bytes)), where);
      let problem: string | undefined;
      if (s.exited() !== undefined) problem = 'the server process ended';
      else if (answer.code !== grpc.status.OK && answer.code !== grpc.status.INVALID_ARGUMENT) problem = `status ${grpc.status[answer.code]}: ${answer.details.slice(0, 300)}`;
      // Every message before a malformed one is a request, answered once; nothing after it is read.
      else if (answer.responses.length > cases.length) problem = `${answer.responses.length} responses to ${cases.length} messages`;
      else if (answer.code === grpc.status.OK && answer.responses.length !== cases.length) problem = `OK after ${answer.responses.length} responses to ${cases.length} messages`;
      if (problem) throw new Error(`${where()}: ${problem} (server process: ${await s.endAfterFailure()})`);
    }
    const { client: cl } = await connect();
    await withHangGuard(expectGrpcServes(cl, r), () => `seed ${seed}, after the streams: a valid request`);
  });
});

/**
 * gRPC framing mistakes below the message: a length prefix promising more than is sent, a compressed flag without
 * an encoding, an unknown encoding, a gzip flag over bytes that are not gzip. The answer is grpc-js's to give (its
 * status for a protocol error is INTERNAL, as the gRPC spec says); the server must answer and go on serving.
 */
describe(suiteTitle('gRPC fuzz: framing'), () => {
  function call(port: number, body: Buffer, headers: Record<string, string>): Promise<{ status?: number; rst?: number }> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on('error', () => undefined);
      const req = session.request({ ':method': 'POST', ':path': INFER_PATH, 'content-type': 'application/grpc', te: 'trailers', ...headers });
      let status: number | undefined;
      const take = (h: http2.IncomingHttpHeaders) => {
        if (h['grpc-status'] !== undefined) status = Number(h['grpc-status']);
      };
      req.on('response', take);
      req.on('trailers', take);
      req.on('data', () => undefined);
      req.on('error', () => undefined);
      req.on('close', () => {
        session.close();
        resolve({ status, rst: req.rstCode });
      });
      const timer = setTimeout(() => {
        session.destroy();
        reject(new Error(`no status and no reset within ${HANG_MS} ms`));
      }, HANG_MS);
      req.on('close', () => clearTimeout(timer));
      req.end(body);
    });
  }

  function frame(message: Buffer, compressed: boolean, declared = message.length): Buffer {
    const header = Buffer.alloc(5);
    header[0] = compressed ? 1 : 0;
    header.writeUInt32BE(declared, 1);
    return Buffer.concat([header, message]);
  }

  it('answers or resets every malformed frame and keeps serving', async () => {
    const r = new Rng(SEED + 1);
    const valid = INFER_METHOD.requestSerialize(validMessage('add_sub', r));
    const cases: [string, Buffer, Record<string, string>][] = [
      ['a length prefix 10 bytes beyond the message', frame(valid, false, valid.length + 10), {}],
      ['a length prefix of 2^32-1', frame(valid, false, 0xffffffff), {}],
      ['a frame header cut short', frame(valid, false).subarray(0, 3), {}],
      ['a compressed flag without grpc-encoding', frame(valid, true), {}],
      ['gzip flag over bytes that are not gzip', frame(valid, true), { 'grpc-encoding': 'gzip' }],
      ['truncated gzip', frame(gzipSync(valid).subarray(0, 10), true), { 'grpc-encoding': 'gzip' }],
      ['an unknown grpc-encoding', frame(gzipSync(valid), true), { 'grpc-encoding': 'br' }],
      ['a flag byte of 7', Buffer.concat([Buffer.from([7]), frame(valid, false).subarray(1)]), {}],
      ['two messages on a unary call', Buffer.concat([frame(valid, false), frame(valid, false)]), {}],
      ['no message at all', Buffer.alloc(0), {}],
    ];
    for (const [what, body, headers] of cases) {
      const { server: s, client: cl } = await connect();
      const answer = await call(s.grpc, body, headers);
      const where = `seed ${SEED + 1}, ${what}; sent ${preview(body, 40)}`;
      if (s.exited() !== undefined) throw new Error(`${where}: the server process ended (${s.exited()})`);
      if (answer.status === undefined && answer.rst === undefined) throw new Error(`${where}: neither a status nor a reset`);
      await withHangGuard(expectGrpcServes(cl, r), () => `${where}: a valid request afterwards`);
    }
  });
});
