import { Rng, suiteTitle, type RawResponse } from './helpers';
import { MODELS, runCases, stopServer, validJson, type HttpCase } from './http-cases';
import { serialize } from './json-mutator';

// Requests that go wrong before the infer codec: malformed %-escapes, dot segments, absolute form, odd methods,
// and requests Node's HTTP parser refuses. Each on its own connection to a server in a child process.

const SEED = 0x7e573;

afterAll(stopServer);

/**
 * Paths with malformed %-escapes, dot segments, absolute form and odd methods. Malformed escapes on model routes
 * threw a URIError out of the request handler, which ended the process.
 */
describe(suiteTitle('HTTP fuzz: paths and methods'), () => {
  const PATHS = [
    '/v2/models/%ZZ/infer',
    '/v2/models/%E0%A4%A/infer',
    '/v2/models/%/infer',
    '/v2/models/add_sub%/infer',
    '/v2/models/%E0%A4%A/versions/1/infer',
    '/v2/models/%ZZ',
    '/v2/models/%ZZ/ready',
    '/v2/models/%ZZ/config',
    '/v2/models/%ZZ/stats',
    '/v2/models/%E0%A4%A/trace/setting',
    '/v2/repository/models/%ZZ/load',
    '/v2/systemsharedmemory/region/%ZZ/status',
    '/v2/models/add_sub/../add_sub/infer',
    '/v2/models/../v2/models/add_sub/infer',
    '/v2/models/..%2Fadd_sub/infer',
    '/v2/models/%2e%2e/infer',
    '//v2/models/add_sub/infer',
    '/v2/models/add_sub/infer/',
    '/v2/models/add_sub/infer?x=%ZZ',
    '/v2/models/add_sub/versions/99999999999999999999/infer',
    '/v2/models/add_sub/versions/01/infer',
    '/v2/models/%00/infer',
    '/v2/health/live%00',
    `/v2/models/${'%41'.repeat(2000)}/infer`,
    `/${'a'.repeat(6000)}`,
    '/v2/models/\u00e6\u0097\u00a5/infer',
    '*',
  ];
  const METHODS = ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'POST'];

  function pathCase(r: Rng, i: number): HttpCase {
    // Every listed path once with POST and a valid body, then random escapes and methods.
    const model = r.pick(MODELS);
    const body = Buffer.from(serialize(validJson(model, r)));
    if (i < PATHS.length) return { label: `POST ${PATHS[i]}`, request: { path: PATHS[i] as string, body } };
    const escapes = ['%ZZ', '%E0%A4%A', '%', '%C0%AF', '%FF', '%2F', '%25', '%u0041', '..', '.', '%00'];
    const method = r.pick(METHODS);
    const path = r.chance(0.5)
      ? `/v2/models/${model}${r.pick(escapes)}${r.chance(0.5) ? '/infer' : r.pick(['', '/ready', '/config', '/stats', '/versions/1'])}`
      : `/v2/models/${r.pick(escapes)}${r.pick(escapes)}/${r.pick(['infer', 'ready', 'config', 'stats', 'trace/setting', 'generate'])}`;
    return { label: `${method} ${path}`, request: { method, path, body: method === 'GET' ? Buffer.alloc(0) : body } };
  }

  it('answers malformed paths and odd methods with a 4xx JSON error without crashing', async () => {
    const seed = SEED;
    const r = new Rng(seed);
    const cases = Array.from({ length: 200 }, (_, i) => pathCase(r, i));
    expect(await runCases(cases, seed)).toBe(200);
  });

  it('serves an infer request in absolute form, and refuses HEAD with 405', async () => {
    const body = Buffer.from(
      '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]},{"name":"INPUT1","datatype":"FP32","shape":[1,4],"data":[4,3,2,1]}]}',
    );
    const cases: HttpCase[] = [
      { label: 'absolute form', request: { path: 'http://127.0.0.1/v2/models/add_sub/infer', body } },
      { label: 'HEAD on infer', request: { method: 'HEAD', path: '/v2/models/add_sub/infer' } },
    ];
    const answers: (RawResponse | undefined)[] = [];
    const check = (res: RawResponse | undefined) => (answers.push(res), res ? undefined : 'no answer');
    expect(await runCases(cases, SEED + 1, { check })).toBe(cases.length);
    const [absolute, head] = answers;
    expect(absolute?.status).toBe(200);
    expect((JSON.parse(absolute?.body.toString() ?? '{}') as { outputs: { data: number[] }[] }).outputs.map((o) => o.data)).toEqual([
      [5, 5, 5, 5],
      [-3, -1, 1, 3],
    ]);
    expect(head?.status).toBe(405);
  });
});

/** Requests Node's HTTP parser refuses before any route runs: Triton answers these 400 with a JSON error too. */
describe(suiteTitle('HTTP fuzz: requests the HTTP parser refuses'), () => {
  it('answers 400 with a JSON error body', async () => {
    const seed = SEED + 2;
    const body = Buffer.from('{"inputs":[]}');
    const path = '/v2/models/add_sub/infer';
    const cases: HttpCase[] = [
      { label: 'Content-Length and Transfer-Encoding', request: { path, headers: [['Content-Length', '13'], ['Transfer-Encoding', 'chunked']], body } },
      { label: 'two different Content-Lengths', request: { path, headers: [['Content-Length', '13'], ['Content-Length', '14']], body } },
      { label: 'a negative Content-Length', request: { path, headers: [['Content-Length', '-1']], body } },
      { label: 'a bad chunk size', request: { path, headers: [['Transfer-Encoding', 'chunked']], body: Buffer.from('zz\r\n{}\r\n0\r\n\r\n') } },
      { label: 'a header without a colon', request: { path, headers: [['X-Bad\r\nNoColonHere', 'x']], body } },
      { label: 'a control character in a header value', request: { path, headers: [['X-Bad', 'a\u0001b']], body } },
      { label: 'an unknown method', request: { method: 'FOO', path, body } },
      { label: 'a lower-case method', request: { method: 'post', path, body } },
    ];
    expect(await runCases(cases, seed, { halfClose: true })).toBe(cases.length);
  });
});

