import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { join } from 'node:path';
import * as tls from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { Triton, type TritonConfigInit } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { makeTestCertificates, type TestCertificates } from '../helpers/certificates';
import { forkTracked } from '../helpers/resources';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferResponseMessage } from '../../lib/protocol/messages';
import { postInfer as postKeepAlive } from '../helpers/infer-post';

// SIGTERM under load, against a server in a process of its own that stops through serve(): every request gets
// its answer (200 with the right numbers, or 503 / UNAVAILABLE once the server stops), no connection is reset,
// and the process exits 0.

const ROOT = join(__dirname, '..', '..');
const CLIENTS = 16;
/** Responses every client must have had before the signal, so that the signal lands under full load. */
const BEFORE_SIGNAL = 5;

interface Ports {
  http: number;
  grpc: number;
}

function startServer(): Promise<{ child: ChildProcess; ports: Ports; exited: Promise<number | null> }> {
  // Tracked: killed after the test if the test has not seen it exit.
  const child = forkTracked(join(ROOT, 'test/fixtures/drain/server.js'), ['20'], {
    cwd: ROOT,
    execArgv: ['--require', join(ROOT, 'lib/instances/worker/register-ts.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ports = new Promise<Ports>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ports));
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before serving`)));
  });
  return ports.then((p) => ({ child, ports: p, exited }));
}

/** Outcome counts of a load run. */
interface Tally {
  ok: number;
  /** 503 (HTTP) or UNAVAILABLE (gRPC): refused because the server is stopping. */
  refused: number;
  /** A new connection refused once the server stopped listening (the request was never sent). */
  connectionRefused: number;
  /** Anything else: resets, broken pipes, hang-ups, other statuses, wrong numbers. */
  lost: string[];
}

/** Resolves once every client has had `n` answers. */
function countdown(n: number): { tick: () => void; reached: Promise<void> } {
  let left = n;
  let resolve!: () => void;
  const reached = new Promise<void>((r) => (resolve = r));
  return {
    tick: () => {
      if (--left === 0) resolve();
    },
    reached,
  };
}


/** One keep-alive HTTP client sending requests back to back until the server refuses one or the connection fails. */
async function httpClient(port: number, tally: Tally, warm: () => void): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let answers = 0;
  try {
    for (;;) {
      let res: { status: number; connection: string | undefined; body: string };
      try {
        res = await postKeepAlive(agent, port);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // A connection the closing port refused, or reset before it was established: no request went out.
        if (code === 'ECONNREFUSED' || (err as NodeJS.ErrnoException).syscall === 'connect') tally.connectionRefused++;
        else tally.lost.push(`HTTP ${code ?? ''} ${(err as Error).message}`);
        return;
      }
      if (++answers === BEFORE_SIGNAL) warm();
      if (res.status === 503) {
        // Refused, and told not to send again on this connection.
        if (res.connection === 'close' && res.body === '{"error":"Server is stopping and accepts no new requests"}') tally.refused++;
        else tally.lost.push(`HTTP 503 with Connection: ${res.connection ?? '(none)'} and ${res.body}`);
        return;
      }
      const data = res.status === 200 ? (JSON.parse(res.body) as { outputs: { data: number[] }[] }).outputs[0]?.data : undefined;
      if (JSON.stringify(data) !== '[2,4,6]') {
        tally.lost.push(`HTTP ${res.status} ${res.body}`);
        return;
      }
      tally.ok++;
    }
  } finally {
    agent.destroy();
  }
}

const services = loadProtos('number');

/** One gRPC client (a channel of its own) calling ModelInfer back to back until a call fails. */
async function grpcClient(port: number, tally: Tally, warm: () => void): Promise<void> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const def = services.inference.ModelInfer as grpc.MethodDefinition<object, ModelInferResponseMessage>;
  const request = {
    model_name: 'double',
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3] }],
    raw_input_contents: [Buffer.from(Float32Array.of(1, 2, 3).buffer)],
  };
  let answers = 0;
  try {
    for (;;) {
      const { err, value } = await new Promise<{ err?: grpc.ServiceError; value?: ModelInferResponseMessage }>((resolve) =>
        client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, (e, v) => resolve(e ? { err: e } : { value: v })),
      );
      if (++answers === BEFORE_SIGNAL) warm();
      if (err) {
        if (err.code === grpc.status.UNAVAILABLE) tally.refused++;
        else tally.lost.push(`gRPC ${grpc.status[err.code]} ${err.details}`);
        return;
      }
      const raw = value?.raw_output_contents?.[0];
      const data = raw ? Array.from(new Float32Array(Uint8Array.from(raw).buffer)) : undefined;
      if (JSON.stringify(data) !== '[2,4,6]') {
        tally.lost.push(`gRPC wrong answer ${JSON.stringify(data)}`);
        return;
      }
      tally.ok++;
    }
  } finally {
    client.close();
  }
}

describe('SIGTERM under 16-way load', () => {
  it.each([
    ['HTTP (keep-alive connections)', httpClient, 'http'],
    ['gRPC', grpcClient, 'grpc'],
  ] as const)('%s: no request lost or reset, the ones after the signal refused, exit 0', async (_label, client, protocol) => {
    const { child, ports, exited } = await startServer();
    const tally: Tally = { ok: 0, refused: 0, connectionRefused: 0, lost: [] };
    const warm = countdown(CLIENTS);
    const clients = Array.from({ length: CLIENTS }, () => client(ports[protocol], tally, warm.tick));
    await warm.reached;
    const okAtSignal = tally.ok;
    child.kill('SIGTERM');
    await Promise.all(clients);
    const code = await exited;
    expect(tally.lost).toEqual([]);
    expect(code).toBe(0);
    // Every client ran until the server refused it: all of them were under way when the signal came.
    expect(tally.refused + tally.connectionRefused).toBe(CLIENTS);
    expect(tally.refused).toBeGreaterThan(0);
    expect(okAtSignal).toBeGreaterThanOrEqual(CLIENTS * (BEFORE_SIGNAL - 1));
  });
});

// ---- the drain step by step, in process ------------------------------------------------------------

/** An answer read off a raw connection. */
interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * A raw keep-alive connection (plain or TLS): requests one after another, each answer read in full by its
 * Content-Length; `ended` says how the server ended it: 'closed' (an orderly close) or the error's code.
 */
class RawConnection {
  private buffer = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  private how: string | undefined;
  readonly ended: Promise<string>;

  private constructor(private readonly socket: net.Socket) {
    let settle!: (how: string) => void;
    this.ended = new Promise((resolve) => (settle = resolve));
    const end = (how: string): void => {
      this.how ??= how;
      settle(this.how);
      this.wake?.();
    };
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake?.();
    });
    socket.on('end', () => end('closed'));
    socket.on('error', (err: NodeJS.ErrnoException) => end(err.code ?? err.message));
    socket.on('close', () => end('closed'));
  }

  static open(port: number, ca?: Buffer): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = ca ? tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }) : net.connect(port, '127.0.0.1');
      socket.once(ca ? 'secureConnect' : 'connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Sends one request and reads its answer; rejects if the connection ends first. */
  async request(raw: string): Promise<RawAnswer> {
    this.socket.write(raw);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine = '', ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(statusLine.split(' ')[1]), headers, body };
        }
      }
      if (this.how !== undefined) throw new Error(`connection ended (${this.how}) before the answer: ${JSON.stringify(this.buffer.toString('latin1'))}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Resolves once the port refuses new connections; each connection it still accepts is closed at once. */
async function portClosed(port: number): Promise<void> {
  for (;;) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (!accepted) return;
  }
}

const HELD_INFER = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] });
const postInfer = (body = HELD_INFER): string =>
  `POST /v2/models/held/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
const STOPPING = { error: 'Server is stopping and accepts no new requests' };

/** A model call the test holds: `running` once the call has begun, `release()` lets it finish. */
function gate(): { running: Promise<void>; entered: () => void; released: Promise<void>; release: () => void } {
  let entered!: () => void;
  let release!: () => void;
  const running = new Promise<void>((resolve) => (entered = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  return { running, entered, released, release };
}

describe('stopping closes each HTTP connection between two exchanges', () => {
  let certificates: TestCertificates;
  beforeAll(() => {
    certificates = makeTestCertificates('drain');
  });
  afterAll(() => certificates?.remove());

  let triton: Triton | undefined;
  const connections: RawConnection[] = [];
  afterEach(async () => {
    for (const c of connections.splice(0)) c.close();
    await triton?.stop();
    triton = undefined;
  });

  it.each([['HTTP'], ['HTTPS']])(
    '%s: every request is answered in full, the ones after the signal 503 with Connection: close, and each connection closes between two exchanges',
    async (scheme) => {
      const secure = scheme === 'HTTPS';
      const config: TritonConfigInit = secure ? { httpUseSsl: true, httpServerCert: certificates.files.server.cert, httpServerKey: certificates.files.server.key } : {};
      // The model's calls, in order, each held until the test releases it (one instance, so one call at a time).
      const holds = [gate(), gate()];
      let calls = 0;
      // A short exit timeout: a failure before the calls are released then ends quickly.
      const server = new Triton({ httpPort: 0, httpAddress: '127.0.0.1', allowGrpc: false, allowMetrics: false, logLevel: 'silent', exitTimeoutSeconds: 2, ...config });
      triton = server;
      server.bind({
        modelName: 'held',
        inferFunc: batch(async ({ x }) => {
          const hold = holds[calls++]!;
          hold.entered();
          await hold.released;
          return { y: { ...x!, data: (x!.data as Float32Array).map((v) => v * 2) } };
        }),
        inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
        outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
        config: { maxBatchSize: 8 },
      });
      await server.run();
      const port = server.ports.http as number;
      const ca = secure ? readFileSync(certificates.files.ca.cert) : undefined;
      const open = async (): Promise<RawConnection> => {
        const c = await RawConnection.open(port, ca);
        connections.push(c);
        return c;
      };
      const expectRefused = (answer: RawAnswer): void => {
        expect(answer.status).toBe(503);
        expect(answer.headers.connection).toBe('close');
        expect(JSON.parse(answer.body)).toEqual(STOPPING);
      };
      const expectDoubled = (answer: RawAnswer): void => {
        expect(answer.status).toBe(200);
        expect((JSON.parse(answer.body) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
      };

      // first, second: infer requests in flight when the signal comes (the second queued behind the first).
      // idle: a kept-alive connection between two requests. fresh: a connection whose first request comes only
      // after the port has closed.
      const first = await open();
      const second = await open();
      const idle = await open();
      const fresh = await open();
      const firstAnswer = first.request(postInfer());
      await holds[0]!.running;
      const secondAnswer = second.request(postInfer());
      expect((await idle.request(get('/v2/health/ready'))).status).toBe(200);
      // A later connection answered shows that the server has accepted `fresh` (its accept queue is in order).
      expect((await (await open()).request(get('/v2/health/live', 'Connection: close\r\n'))).status).toBe(200);

      const stopped = server.stop();
      // Draining (the port is open, work is in flight): a request on a kept-alive connection is refused, and the
      // connection closed after the answer.
      expectRefused(await idle.request(postInfer()));
      expect(await idle.ended).toBe('closed');
      // A response under way is written in full; the client's next request on the connection is refused.
      holds[0]!.release();
      expectDoubled(await firstAnswer);
      expectRefused(await first.request(postInfer()));
      expect(await first.ended).toBe('closed');

      // The last one in flight: once it is answered the port closes. Its connection, idle, is closed by the
      // server (an orderly close, not a reset).
      holds[1]!.release();
      expectDoubled(await secondAnswer);
      await portClosed(port);
      expect(await second.ended).toBe('closed');
      // A connection open before the port closed still gets an answer to its first request.
      expectRefused(await fresh.request(get('/v2/health/ready')));
      expect(await fresh.ended).toBe('closed');
      expect(await stopped).toBe(0);
    },
  );
});
