import * as https from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Triton, TritonConfig, tensor, type TritonConfigInit } from 'tstriton';
import { ClientError, ModelClient, type ClientTlsOptions } from 'tstriton/client';
import { makeTestCertificates, type TestCertificates } from '../helpers/certificates';
import { bindAddSub } from '../../examples/add-sub/model';
import { rejectionOf } from '../helpers/caught';
import { loopbackConfig, loopbackTriton } from '../helpers/loopback-triton';

// HTTPS (`httpUseSsl`) and mutual TLS on the HTTP endpoint, with certificates the openssl CLI makes.

let certificates: TestCertificates;
let files: TestCertificates['files'];
const pem = (path: string): Buffer => readFileSync(path);

beforeAll(() => {
  certificates = makeTestCertificates('tls-http');
  files = certificates.files;
});
afterAll(() => certificates?.remove());

let triton: Triton | undefined;
const clients: ModelClient[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await triton?.stop();
  triton = undefined;
});

function tlsConfig(mutual: boolean): TritonConfigInit {
  return {
    httpUseSsl: true,
    httpUseSslMutual: mutual,
    httpServerCert: files.server.cert,
    httpServerKey: files.server.key,
    ...(mutual ? { httpRootCert: files.ca.cert } : {}),
  };
}

async function start(config: TritonConfigInit | TritonConfig): Promise<number> {
  triton = config instanceof TritonConfig ? new Triton(config) : loopbackTriton(config);
  bindAddSub(triton);
  await triton.run();
  return triton.ports.http as number;
}

function client(url: string, tls?: ClientTlsOptions): ModelClient {
  // Refusals must surface as the call's error, not as a readiness wait until the init timeout.
  const c = new ModelClient(url, 'add_sub', { ensureModelIsReady: false, initTimeoutSeconds: 10, inferenceTimeoutSeconds: 10, ...(tls ? { tls } : {}) });
  clients.push(c);
  return c;
}

async function addSub(c: ModelClient): Promise<number[]> {
  const out = await c.inferBatch({ a: tensor('FP32', [1, 2], Float32Array.of(10, 20)), b: tensor('FP32', [1, 2], Float32Array.of(1, 2)) });
  return Array.from(out.add!.data as Float32Array);
}

const INFER = JSON.stringify({ inputs: [{ name: 'a', datatype: 'FP32', shape: [1, 1], data: [3] }, { name: 'b', datatype: 'FP32', shape: [1, 1], data: [1] }] });

/** A raw https request; resolves with the status and body, or rejects with the connection's error. */
function rawHttps(port: number, options: https.RequestOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, method: 'POST', path: '/v2/models/add_sub/infer', headers: { 'Content-Type': 'application/json' }, agent: false, ...options },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(INFER);
  });
}

const failure = (p: Promise<unknown>): Promise<Error> => rejectionOf(p);

describe('HTTPS', () => {
  it('serves inference and the other routes over TLS to ModelClient and a raw https request', async () => {
    const port = await start(tlsConfig(false));
    expect(await addSub(client(`https://127.0.0.1:${port}`, { ca: pem(files.ca.cert) }))).toEqual([11, 22]);
    const raw = await rawHttps(port, { ca: pem(files.ca.cert) });
    expect(raw.status).toBe(200);
    expect((JSON.parse(raw.body) as { outputs: { name: string; data: number[] }[] }).outputs.find((o) => o.name === 'add')!.data).toEqual([4]);
    // PEM text works as well as its bytes, and the certificate's DNS name as well as its IP.
    expect((await client(`https://localhost:${port}`, { ca: readFileSync(files.ca.cert, 'utf8') }).modelMetadata()).name).toBe('add_sub');
  });

  it('a client that does not trust the CA, or speaks plain HTTP, gets no answer', async () => {
    const port = await start(tlsConfig(false));
    const untrusted = await failure(client(`https://127.0.0.1:${port}`, { ca: pem(files.other_ca.cert) }).modelMetadata());
    expect(untrusted).toBeInstanceOf(ClientError);
    expect((untrusted as ClientError).code).toBe('UNAVAILABLE');
    expect((await failure(client(`http://127.0.0.1:${port}`).modelMetadata())).message).toMatch(/connection to 127\.0\.0\.1:\d+ (failed|lost)/);
  });
});

describe('HTTPS with mutual TLS', () => {
  it('serves a client with a certificate the root CA signed', async () => {
    const port = await start(tlsConfig(true));
    const tls = { ca: pem(files.ca.cert), cert: pem(files.client.cert), key: pem(files.client.key) };
    expect(await addSub(client(`https://127.0.0.1:${port}`, tls))).toEqual([11, 22]);
    const raw = await rawHttps(port, tls);
    expect(raw.status).toBe(200);
  });

  it('refuses a client without a certificate, or with one another CA signed, at the handshake', async () => {
    const port = await start(tlsConfig(true));
    const none = await failure(rawHttps(port, { ca: pem(files.ca.cert) }));
    expect((none as NodeJS.ErrnoException).code ?? none.message).toMatch(/ECONNRESET|EPROTO|ERR_SSL|certificate required|socket hang up/i);
    const stranger = await failure(rawHttps(port, { ca: pem(files.ca.cert), cert: pem(files.stranger.cert), key: pem(files.stranger.key) }));
    expect((stranger as NodeJS.ErrnoException).code ?? stranger.message).toMatch(/ECONNRESET|EPROTO|ERR_SSL|unknown ca|socket hang up/i);
    const viaClient = await failure(client(`https://127.0.0.1:${port}`, { ca: pem(files.ca.cert) }).modelMetadata());
    expect((viaClient as ClientError).code).toBe('UNAVAILABLE');
  });
});

describe('HTTPS settings', () => {
  it('turn on from TSTRITON_* environment variables, as a server script started by tritonclient tests reads them', async () => {
    const env = {
      TSTRITON_HTTP_USE_SSL_MUTUAL: 'true',
      TSTRITON_HTTP_SERVER_CERT: files.server.cert,
      TSTRITON_HTTP_SERVER_KEY: files.server.key,
      TSTRITON_HTTP_ROOT_CERT: files.ca.cert,
    };
    const port = await start(TritonConfig.fromEnv(env, loopbackConfig()));
    const tls = { ca: pem(files.ca.cert), cert: pem(files.client.cert), key: pem(files.client.key) };
    expect(await addSub(client(`https://127.0.0.1:${port}`, tls))).toEqual([11, 22]);
    expect((await failure(client(`https://127.0.0.1:${port}`, { ca: pem(files.ca.cert) }).modelMetadata())).message).toMatch(/connection to 127\.0\.0\.1:\d+ (failed|lost)/);
  });

  it.each([
    ['no certificate', () => ({ httpUseSsl: true, httpServerKey: files.server.key }), /httpUseSsl needs httpServerCert/],
    ['no key', () => ({ httpUseSsl: true, httpServerCert: files.server.cert }), /httpUseSsl needs httpServerKey/],
    ['mutual without a root certificate', () => ({ ...tlsConfig(false), httpUseSslMutual: true }), /httpUseSslMutual needs httpRootCert/],
    ['a file that cannot be read', () => ({ ...tlsConfig(false), httpServerKey: join(certificates.dir, 'missing.key') }), /httpServerKey: cannot read '.*missing\.key'/],
    ['a key that does not match the certificate', () => ({ ...tlsConfig(false), httpServerKey: files.client.key }), /invalid HTTP TLS setting: .*httpServerCert '.*server\.pem'/],
  ] as [string, () => TritonConfigInit, RegExp][])('%s fails new Triton() with INVALID_CONFIG', (_what, config, message) => {
    expect(() => loopbackTriton(config())).toThrow(message);
  });

  it('refuses a client certificate without its key', () => {
    expect(() => new ModelClient('https://127.0.0.1:1', 'm', { tls: { cert: 'x' } })).toThrow(/tls\.key is missing/);
  });
});
