import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Triton, TritonError, type TritonConfigInit } from 'tstriton';
import { ClientError, ModelClient, type ModelClientOptions } from 'tstriton/client';
import { makeTestCertificates, type TestCertificates } from '../helpers/certificates';
import { bindAddSub } from '../../examples/add-sub/model';
import { rejectionOf } from '../helpers/caught';
import { loopbackTriton } from '../helpers/loopback-triton';

// ---- certificates, made with the openssl CLI -----------------------------------------------------

let certificates: TestCertificates;
let dir: string;
/** PEM files by name: ca, server, client (signed by ca) and stranger (a client signed by another CA). */
let files: TestCertificates['files'];
const pem = (path: string): Buffer => readFileSync(path);

beforeAll(() => {
  certificates = makeTestCertificates('tls-grpc');
  ({ dir, files } = certificates);
});

afterAll(() => certificates?.remove());

// ---- server and clients ---------------------------------------------------------------------------

const BASE: TritonConfigInit = { allowGrpc: true, allowHttp: false };

let triton: Triton | undefined;
const clients: ModelClient[] = [];

function tlsConfig(mutual: boolean): TritonConfigInit {
  return {
    grpcUseSsl: true,
    grpcUseSslMutual: mutual,
    grpcServerCert: files.server!.cert,
    grpcServerKey: files.server!.key,
    ...(mutual ? { grpcRootCert: files.ca!.cert } : {}),
  };
}

async function start(config: TritonConfigInit): Promise<string> {
  triton = loopbackTriton({ ...BASE, ...config });
  bindAddSub(triton);
  await triton.run();
  return `127.0.0.1:${triton.ports.grpc}`;
}

function client(url: string, options: ModelClientOptions = {}): ModelClient {
  // Refusals must surface as the call's error, not as a readiness wait until the init timeout.
  const c = new ModelClient(url, 'add_sub', { ensureModelIsReady: false, initTimeoutSeconds: 10, inferenceTimeoutSeconds: 10, ...options });
  clients.push(c);
  return c;
}

async function addSub(c: ModelClient): Promise<number[]> {
  const out = await c.inferSample({ a: Float32Array.of(1, 2), b: Float32Array.of(10, 20) });
  return [...(out.add!.data as Float32Array)];
}

async function failure(p: Promise<unknown>): Promise<ClientError> {
  const err = await rejectionOf<ClientError>(p);
  expect(err).toBeInstanceOf(ClientError);
  return err;
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await triton?.stop();
  triton = undefined;
});

describe('gRPC over TLS (grpcUseSsl)', () => {
  it('serves a grpcs:// ModelClient that trusts the CA', async () => {
    const address = await start(tlsConfig(false));
    expect(await addSub(client(`grpcs://${address}`, { tls: { ca: pem(files.ca!.cert) } }))).toEqual([11, 22]);
    // PEM text works as well as its bytes.
    expect(await addSub(client(`grpcs://${address}`, { tls: { ca: readFileSync(files.ca!.cert, 'utf8') } }))).toEqual([11, 22]);
  });

  it('refuses a plaintext grpc:// client, and a grpcs:// client that does not trust the CA', async () => {
    const address = await start(tlsConfig(false));
    expect((await failure(client(`grpc://${address}`).modelMetadata())).code).toBe('UNAVAILABLE');
    expect((await failure(client(`grpcs://${address}`, { tls: { ca: pem(files.other_ca!.cert) } }).modelMetadata())).code).toBe('UNAVAILABLE');
  });
});

describe('gRPC over mutual TLS (grpcUseSslMutual)', () => {
  it('serves a client with a certificate signed by grpcRootCert', async () => {
    const address = await start(tlsConfig(true));
    const tls = { ca: pem(files.ca!.cert), cert: pem(files.client!.cert), key: pem(files.client!.key) };
    expect(await addSub(client(`grpcs://${address}`, { tls }))).toEqual([11, 22]);
  });

  it('refuses a client without a certificate, and one whose certificate another CA signed', async () => {
    const address = await start(tlsConfig(true));
    const none = await failure(client(`grpcs://${address}`, { tls: { ca: pem(files.ca!.cert) } }).modelMetadata());
    expect(none.code).toBe('UNAVAILABLE');
    const stranger = { ca: pem(files.ca!.cert), cert: pem(files.stranger!.cert), key: pem(files.stranger!.key) };
    expect((await failure(client(`grpcs://${address}`, { tls: stranger }).modelMetadata())).code).toBe('UNAVAILABLE');
  });

  it('grpcUseSslMutual alone turns TLS on, as Triton does', async () => {
    const { grpcUseSsl: _, ...mutualOnly } = tlsConfig(true);
    const address = await start(mutualOnly);
    const tls = { ca: pem(files.ca!.cert), cert: pem(files.client!.cert), key: pem(files.client!.key) };
    expect(await addSub(client(`grpcs://${address}`, { tls }))).toEqual([11, 22]);
    expect((await failure(client(`grpc://${address}`).modelMetadata())).code).toBe('UNAVAILABLE');
  });
});

describe('gRPC TLS settings are checked by new Triton()', () => {
  const invalid = (config: TritonConfigInit): TritonError => {
    try {
      loopbackTriton({ ...BASE, ...config });
    } catch (err) {
      expect(err).toBeInstanceOf(TritonError);
      expect((err as TritonError).code).toBe('INVALID_CONFIG');
      return err as TritonError;
    }
    throw new Error('expected new Triton() to fail');
  };

  it.each([
    ['no certificate', () => ({ grpcUseSsl: true, grpcServerKey: files.server!.key }), /grpcUseSsl needs grpcServerCert/],
    ['no key', () => ({ grpcUseSsl: true, grpcServerCert: files.server!.cert }), /grpcUseSsl needs grpcServerKey/],
    ['mutual without a root certificate', () => ({ ...tlsConfig(false), grpcUseSslMutual: true }), /grpcUseSslMutual needs grpcRootCert/],
    ['a file that cannot be read', () => ({ ...tlsConfig(false), grpcServerKey: join(dir, 'missing.key') }), /grpcServerKey: cannot read '.*missing\.key'/],
    ['a file that is not PEM', () => ({ ...tlsConfig(false), grpcServerCert: join(dir, 'server.ext') }), /grpcServerCert: '.*server\.ext' is not a PEM file/],
    ['a key that does not match the certificate', () => ({ ...tlsConfig(false), grpcServerKey: files.client!.key }), /invalid gRPC TLS setting: .*grpcServerCert '.*server\.pem', grpcServerKey '.*client\.key'/],
  ] as const)('%s', (_name, config, message) => {
    expect(invalid(config()).message).toMatch(message);
  });

  it('a ModelClient refuses a certificate without its key', () => {
    expect(() => new ModelClient('grpcs://127.0.0.1:1', 'm', { tls: { cert: pem(files.client!.cert) } })).toThrow(/tls.key is missing/);
  });
});
