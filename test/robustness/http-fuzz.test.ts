import { deflateSync, gzipSync } from 'node:zlib';
import { Rng, errorOf, isClientErrorStatus, rawHttp, requestBytes, suiteSeed, suiteTitle, type RawRequest, type RawResponse } from './helpers';
import { MODELS, chunked, generate, inferPath, lengthPrefix, liveServer, runCases, stopServer, validBinary, validJson, type HttpCase, type ModelName } from './http-cases';
import { entry, lit, mutate, randomNode, serialize, setEntryOf, type JsonNode } from './json-mutator';

// Malformed infer requests, each on a connection of its own to a server in a child process, so that a crash is the
// process exiting. Failures print the seed and the case; ROBUSTNESS_SEED=<n> runs another seed.

const SEED = suiteSeed(0x7e571);
const CASES = 2000;

afterAll(stopServer);

// ---- the malformed cases -------------------------------------------------------------------------

/** Valid JSON requests with 1-3 mutations (deletions, type swaps, edge values, nesting, unicode), sometimes truncated. */
function jsonCase(r: Rng): HttpCase {
  const model = r.pick(MODELS);
  let root = validJson(model, r);
  const labels: string[] = [];
  for (let i = 0, n = 1 + r.int(3); i < n; i++) {
    const m = mutate(root, r);
    root = m.root;
    labels.push(m.label);
  }
  let body = Buffer.from(serialize(root), 'utf8');
  if (r.chance(0.1)) {
    body = body.subarray(0, r.int(body.length));
    labels.push(`truncated to ${body.length} bytes`);
  } else if (r.chance(0.05)) {
    const at = r.int(body.length + 1);
    body = Buffer.concat([body.subarray(0, at), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), body.subarray(at)]);
    labels.push(`invalid UTF-8 at ${at}`);
  }
  return { label: `JSON for ${model}: ${labels.join('; ')}`, request: { path: inferPath(model, r), headers: [['Content-Type', 'application/json']], body } };
}

/** Binary-extension requests with wrong header lengths, sizes, shapes, payloads and BYTES length prefixes. */
function binaryCase(r: Rng): HttpCase {
  const model = r.pick(MODELS);
  const { header, blobs } = validBinary(model, r);
  const labels: string[] = [];
  const firstInput = (): JsonNode | undefined => {
    const inputs = entry(header, 'inputs');
    return inputs?.t === 'arr' ? inputs.items[r.int(inputs.items.length)] : undefined;
  };
  let payload = Buffer.concat(blobs);
  let ihcl: string | undefined;
  for (let i = 0, n = 1 + r.int(2); i < n; i++) {
    switch (r.int(7)) {
      case 0: {
        const input = firstInput();
        const params = entry(input, 'parameters');
        const size = r.pick(['-1', '0', '1', '15', '17', '1e3', '1.5', '"16"', 'null', '{}', '12345678901234567890', '9007199254740993', '4294967296']);
        if (params) setEntryOf(params, 'binary_data_size', lit(size));
        labels.push(`binary_data_size ${size}`);
        break;
      }
      case 1: {
        const input = firstInput();
        const shape = r.pick(['[2147483648,2147483648]', '[1e20]', '[0]', '[1,0]', '[-1,4]', '[1,4.5]', '[1,9007199254740993]', '[1,12345678901234567890]', '[]', '[1,4,1]', '[1,1e308]']);
        if (input) setEntryOf(input, 'shape', lit(shape));
        labels.push(`shape ${shape}`);
        break;
      }
      case 2:
        payload = payload.subarray(0, r.int(payload.length + 1));
        labels.push(`payload cut to ${payload.length}`);
        break;
      case 3:
        payload = Buffer.concat([payload, r.bytes(1 + r.int(40))]);
        labels.push(`payload extended to ${payload.length}`);
        break;
      case 4: {
        // A BYTES length prefix promising more than there is, or a prefix cut short.
        const bad = r.pick([lengthPrefix(0xffffffff), lengthPrefix(1000), lengthPrefix(0x80000000), Buffer.from([5, 0])]);
        const at = r.int(payload.length + 1);
        payload = Buffer.concat([payload.subarray(0, at), bad, payload.subarray(at)]);
        labels.push(`length prefix ${bad.toString('hex')} at ${at}`);
        break;
      }
      case 5: {
        const m = mutate(header, r);
        labels.push(`header: ${m.label}`);
        if (m.root !== header) return { label: `binary for ${model}: ${labels.join('; ')}`, request: binaryRequest(model, m.root, payload, undefined, r) };
        break;
      }
      default:
        ihcl = r.pick(['-1', '0', 'LEN-1', 'LEN+1', 'BODY', 'BODY+1', 'abc', '', ' ', '1e3', '0x10', '99999999999999999999', '1.5', '+5', '5, 6', '-0']);
        labels.push(`Inference-Header-Content-Length ${JSON.stringify(ihcl)}`);
    }
  }
  return { label: `binary for ${model}: ${labels.join('; ')}`, request: binaryRequest(model, header, payload, ihcl, r) };
}

function binaryRequest(model: ModelName, header: JsonNode, payload: Buffer, ihcl: string | undefined, r: Rng): RawRequest {
  const head = Buffer.from(serialize(header), 'utf8');
  const body = Buffer.concat([head, payload]);
  const value = (ihcl ?? String(head.length))
    .replace('LEN-1', String(head.length - 1))
    .replace('LEN+1', String(head.length + 1))
    .replace('BODY+1', String(body.length + 1))
    .replace('BODY', String(body.length));
  return { path: inferPath(model, r), headers: [['Content-Type', 'application/octet-stream'], ['Inference-Header-Content-Length', value]], body };
}

/** Random bytes as a body, JSON or binary, with or without a header length (0 is a raw binary request). */
function randomBytesCase(r: Rng): HttpCase {
  const model = r.pick(MODELS);
  const body = r.bytes(r.int(2048));
  const headers: [string, string][] = [['Content-Type', r.pick(['application/json', 'application/octet-stream', 'text/plain'])]];
  if (r.chance(0.5)) headers.push(['Inference-Header-Content-Length', String(r.pick([0, r.int(body.length + 1), body.length + 10]))]);
  return { label: `${body.length} random bytes for ${model} (${headers.map((h) => h.join(': ')).join(', ')})`, request: { path: inferPath(model, r), headers, body } };
}

/** Content-Encoding that lies (gzip over plain JSON), truncated or corrupt gzip, unknown encodings, odd Accept-Encoding. */
function encodingCase(r: Rng): HttpCase {
  const model = r.pick(MODELS);
  const json = Buffer.from(serialize(validJson(model, r)));
  const gz = gzipSync(json);
  const variants: [string, string, Buffer][] = [
    ['gzip over plain JSON', 'gzip', json],
    ['deflate over plain JSON', 'deflate', json],
    ['deflate over gzip', 'deflate', gz],
    ['gzip over deflate', 'gzip', deflateSync(json)],
    ['truncated gzip', 'gzip', gz.subarray(0, r.int(gz.length))],
    ['gzip with a corrupt byte', 'gzip', corrupt(gz, r)],
    ['gzip of garbage', 'gzip', gzipSync(r.bytes(r.int(500)))],
    ['gzip of a mutated request', 'gzip', gzipSync(serialize(mutate(validJson(model, r), r).root))],
    ['empty gzip', 'gzip', Buffer.alloc(0)],
    ['an unknown encoding', r.pick(['br', 'zstd', 'x-gzip', 'gzip, gzip', 'gzip;q=1', '*', 'compress', '\u00e9']), json],
    ['gzip, upper case', 'GZIP', gz],
    ['identity', 'identity', json],
  ];
  const [what, encoding, body] = r.pick(variants);
  const headers: [string, string][] = [['Content-Encoding', encoding]];
  if (r.chance(0.3)) headers.push(['Accept-Encoding', r.pick(['gzip;q=0', 'deflate;q=abc', '*;q=1', 'br', 'gzip;q=1e9', ', ,', 'identity;q=0'])]);
  return { label: `${what} for ${model} (${headers.map((h) => h.join(': ')).join(', ')})`, request: { path: inferPath(model, r), headers, body } };
}

function corrupt(b: Buffer, r: Rng): Buffer {
  const copy = Buffer.from(b);
  const at = r.int(copy.length);
  if (copy.length > 0) copy[at] = (copy[at] as number) ^ (1 + r.int(255));
  return copy;
}

/** A valid body with odd but well-formed headers: content types, header lengths on JSON, chunked framing, padding. */
function headerCase(r: Rng): HttpCase {
  const model = r.pick(MODELS);
  const body = Buffer.from(serialize(validJson(model, r)));
  const options: [string, [string, string][], Buffer][] = [
    ['a UTF-16 content type', [['Content-Type', 'application/json; charset=utf-16']], body],
    ['a header length on a JSON body', [['Inference-Header-Content-Length', String(r.int(body.length + 2))]], body],
    ['Expect: 100-continue', [['Expect', '100-continue']], body],
    ['an 8 KB header', [['X-Pad', 'p'.repeat(8000)]], body],
    ['chunked framing', [['Transfer-Encoding', 'chunked']], chunked(body, r)],
    ['a repeated Content-Type', [['Content-Type', 'application/json'], ['Content-Type', 'text/plain']], body],
    ['an empty body', [], Buffer.alloc(0)],
    ['a JSON null body', [], Buffer.from('null')],
    ['a JSON array body', [], Buffer.from('[1,2]')],
    ['a random JSON value as body', [], Buffer.from(serialize(randomNode(r)))],
  ];
  const [what, headers, b] = r.pick(options);
  return { label: `${what} for ${model}`, request: { path: inferPath(model, r), headers, body: b } };
}
function nextCase(r: Rng): HttpCase {
  const roll = r.int(100);
  if (roll < 45) return jsonCase(r);
  if (roll < 70) return binaryCase(r);
  if (roll < 80) return randomBytesCase(r);
  if (roll < 90) return encodingCase(r);
  return headerCase(r);
}
// ---- the suites -----------------------------------------------------------------------------------

describe(suiteTitle('HTTP fuzz'), () => {
  it(`answers ${CASES} malformed infer requests (seed ${SEED}) with 200 or a 4xx JSON error, and keeps serving right`, async () => {
    expect(await runCases(generate(SEED, CASES, nextCase), SEED)).toBe(CASES);
  });

  it('answers item 8 of the issue: a datatype beyond 2^64 is 400 naming the field, not 500', async () => {
    const s = await liveServer();
    const body = Buffer.from('{"inputs":[{"name":"INPUT0","datatype":12345678901234567890,"shape":[1,4],"data":[1,2,3,4]}]}');
    const res = await rawHttp(s.http, requestBytes({ path: '/v2/models/add_sub/infer', body }));
    expect(res?.status).toBe(400);
    expect(errorOf(res as RawResponse)).toBe("input 'INPUT0' for model 'add_sub': 'datatype' must be a string, got 12345678901234567890");
  });

  it('survives connections that end mid-request (bodies shorter than their Content-Length, cut chunked framing)', async () => {
    const seed = SEED + 1;
    const cut = (r: Rng): HttpCase => {
      const model = r.pick(MODELS);
      const body = Buffer.from(serialize(validJson(model, r)));
      const sent = body.subarray(0, r.int(body.length));
      const headers: [string, string][] = r.chance(0.5) ? [['Content-Length', String(body.length)]] : [['Transfer-Encoding', 'chunked']];
      const payload = headers[0]?.[0] === 'Content-Length' ? sent : chunked(body, r).subarray(0, r.int(body.length));
      return { label: `${payload.length} bytes of a ${body.length}-byte body for ${model} (${headers[0]?.join(': ')})`, request: { path: inferPath(model, r), headers, body: payload } };
    };
    // Whatever the server does with a request it never fully receives (answer 400, or close), it must not crash or hang.
    const check = (res: RawResponse | undefined) => (res && !isClientErrorStatus(res.status) ? `status ${res.status}` : undefined);
    expect(await runCases(generate(seed, 100, cut), seed, { halfClose: true, check })).toBe(100);
  });
});
