import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Triton, TritonConfigInit } from 'tstriton';
import { batch, sample } from 'tstriton/decorators';
import { makeTestCertificates, type TestCertificates } from '../helpers/certificates';
import { frontEndWrites, startDrainServer, type DrainPorts } from '../helpers/drain-server';
import { RawConnection, type RawAnswer } from '../helpers/raw-connection';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferResponseMessage } from '../../lib/protocol/messages';
import { postInfer as postKeepAlive, KSERVE_INFER, OPENAI_COMPLETION, type InferPost } from '../helpers/infer-post';
import { loopbackTriton } from '../helpers/loopback-triton';

// SIGTERM under load, against a server in a process of its own that stops through serve(): every request gets
// its answer (200 with the right numbers, or 503 / UNAVAILABLE once the server stops), no connection is reset,
// and the process exits 0.

const CLIENTS = 16;
/** Responses every client must have had before the signal, so that the signal lands under full load. */
const BEFORE_SIGNAL = 5;

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


/** What an HTTP client of the load test sends, and the answers it expects. */
interface HttpApi {
  readonly request: InferPost;
  /** The body of the 503 that refuses a request once the server stops. */
  readonly stopping: string;
  /** Whether a 200's body is the right answer. */
  readonly answered: (body: string) => boolean;
}

/** KServe v2 infer on the HTTP port: `double` doubles [1, 2, 3]; Triton's error body. */
const KSERVE: HttpApi = {
  request: KSERVE_INFER,
  stopping: '{"error":"Server is stopping and accepts no new requests"}',
  answered: (body) => JSON.stringify((JSON.parse(body) as { outputs: { data: number[] }[] }).outputs[0]?.data) === '[2,4,6]',
};

/** Completions on the OpenAI port: `echo_text` answers with the prompt; OpenAI's error body. */
const OPENAI: HttpApi = {
  request: OPENAI_COMPLETION,
  stopping: '{"error":{"message":"Server is stopping and accepts no new requests","type":"server_error","param":null,"code":"unavailable"}}',
  answered: (body) => (JSON.parse(body) as { choices: { text: string }[] }).choices[0]?.text === 'hi',
};

/** One keep-alive HTTP client sending `api`'s requests back to back until the server refuses one or the connection fails. */
const httpClient = (api: HttpApi) => async (port: number, tally: Tally, warm: () => void): Promise<void> => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let answers = 0;
  try {
    for (;;) {
      let res: { status: number; connection: string | undefined; body: string };
      try {
        res = await postKeepAlive(agent, port, api.request);
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
        if (res.connection === 'close' && res.body === api.stopping) tally.refused++;
        else tally.lost.push(`HTTP 503 with Connection: ${res.connection ?? '(none)'} and ${res.body}`);
        return;
      }
      if (res.status !== 200 || !api.answered(res.body)) {
        tally.lost.push(`HTTP ${res.status} ${res.body}`);
        return;
      }
      tally.ok++;
    }
  } finally {
    agent.destroy();
  }
};

const services = loadProtos('number');

/**
 * One gRPC client (a channel of its own) calling ModelInfer back to back until a call fails. grpc-js carries the
 * channels of one address over one connection unless `options` give each its own (a local subchannel pool).
 */
const grpcClient = (options: grpc.ChannelOptions = {}) => async (port: number, tally: Tally, warm: () => void): Promise<void> => {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options);
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
};

const LOADS = [
  ['HTTP (keep-alive connections)', httpClient(KSERVE), 'http'],
  ['gRPC', grpcClient(), 'grpc'],
  ['the OpenAI port (keep-alive connections)', httpClient(OPENAI), 'openai'],
] as const;

/** The same loads with a connection per gRPC client, so that the kernel spreads them over the front-end threads. */
const SPREAD_LOADS = [LOADS[0], ['gRPC (a connection per client)', grpcClient({ 'grpc.use_local_subchannel_pool': 1 }), 'grpc'], LOADS[2]] as const;

/**
 * 16 clients of `protocol` against the fixture server started with `env`, SIGTERM once each has had its first
 * answers: every request answered, none reset, exit 0. With `threads`, the server must run that many front-end
 * threads, and each must have written answers before the signal (the load is on all of them).
 */
async function sigtermUnderLoad(client: (typeof LOADS)[number][1], protocol: keyof DrainPorts, env: NodeJS.ProcessEnv = {}, threads?: number): Promise<void> {
  const { child, ports, exited } = await startDrainServer({ env });
  const pid = child.pid as number;
  const atStart = threads === undefined ? new Map<string, number>() : frontEndWrites(pid);
  if (threads !== undefined) expect(atStart.size).toBe(threads);
  const tally: Tally = { ok: 0, refused: 0, connectionRefused: 0, lost: [] };
  const warm = countdown(CLIENTS);
  const clients = Array.from({ length: CLIENTS }, () => client(ports[protocol], tally, warm.tick));
  await warm.reached;
  const okAtSignal = tally.ok;
  const atSignal = threads === undefined ? new Map<string, number>() : frontEndWrites(pid);
  child.kill('SIGTERM');
  await Promise.all(clients);
  const code = await exited;
  expect(tally.lost).toEqual([]);
  expect(code).toBe(0);
  // Every client ran until the server refused it: all of them were under way when the signal came.
  expect(tally.refused + tally.connectionRefused).toBe(CLIENTS);
  expect(tally.refused).toBeGreaterThan(0);
  expect(okAtSignal).toBeGreaterThanOrEqual(CLIENTS * (BEFORE_SIGNAL - 1));
  // Each front-end thread had answered some of the load (64 bytes: more than a wake-up, less than any answer).
  expect([...atStart.keys()].map((tid) => (atSignal.get(tid) ?? 0) - (atStart.get(tid) ?? 0) >= 64)).toEqual([...atStart.keys()].map(() => true));
}

describe('SIGTERM under 16-way load', () => {
  it.each(LOADS)('%s: no request lost or reset, the ones after the signal refused, exit 0', (_label, client, protocol) => sigtermUnderLoad(client, protocol));
});

describe('SIGTERM under 16-way load on 2 front-end threads (TSTRITON_HTTP_THREAD_COUNT=2)', () => {
  // The 16 connections spread over both threads (the odds that the kernel puts all on one are 2^-15).
  it.each(SPREAD_LOADS)(
    '%s: no request lost or reset on any thread, the ones after the signal refused, exit 0',
    (_label, client, protocol) => sigtermUnderLoad(client, protocol, { TSTRITON_HTTP_THREAD_COUNT: '2' }, 2),
    120_000,
  );
});

// ---- the drain step by step, in process ------------------------------------------------------------

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
/** The same refusal on the OpenAI port, in OpenAI's error shape. */
const OPENAI_STOPPING = { error: { message: STOPPING.error, type: 'server_error', param: null, code: 'unavailable' } };

/** A refusal of a stopping server: 503 with `Connection: close` and the body `body`. */
function expectRefused(answer: RawAnswer, body: unknown = STOPPING): void {
  expect(answer.status).toBe(503);
  expect(answer.headers.connection).toBe('close');
  expect(JSON.parse(answer.body)).toEqual(body);
}

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

  /**
   * A server on loopback over `scheme` (HTTP or HTTPS), with `config`, stopped after the test. A short exit timeout:
   * a failure before the held calls are released then ends quickly.
   */
  function serverOver(scheme: string, config: TritonConfigInit = {}): Triton {
    const tls: TritonConfigInit = scheme === 'HTTPS' ? { httpUseSsl: true, httpServerCert: certificates.files.server.cert, httpServerKey: certificates.files.server.key } : {};
    triton = loopbackTriton({ exitTimeoutSeconds: 2, ...tls, ...config });
    return triton;
  }

  /** Opens connections to `port` over `scheme`, each closed after the test. */
  const connectorTo = (port: number, scheme: string) => async (): Promise<RawConnection> => {
    const c = await RawConnection.open(port, scheme === 'HTTPS' ? readFileSync(certificates.files.ca.cert) : undefined);
    connections.push(c);
    return c;
  };

  it.each([['HTTP'], ['HTTPS']])(
    '%s: every request is answered in full, the ones after the signal 503 with Connection: close, and each connection closes between two exchanges',
    async (scheme) => {
      // The model's calls, in order, each held until the test releases it (one instance, so one call at a time).
      const holds = [gate(), gate()];
      let calls = 0;
      const server = serverOver(scheme);
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
      const open = connectorTo(port, scheme);
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
      // server (an orderly close, not a reset), after the linger its client is given to come back.
      holds[1]!.release();
      expectDoubled(await secondAnswer);
      await portClosed(port);
      // A connection open before the port closed still gets an answer to its first request.
      expectRefused(await fresh.request(get('/v2/health/ready')));
      expect(await fresh.ended).toBe('closed');
      expect(await second.ended).toBe('closed');
      expect(await stopped).toBe(0);
    },
  );

  it.each([['HTTP'], ['HTTPS']])(
    '%s: the OpenAI port (openaiPort) drains the same way, refusing in OpenAI\'s error shape',
    async (scheme) => {
      const hold = gate();
      const server = serverOver(scheme, { openai: true, openaiPort: 0 });
      // Its first call is held until the test releases it.
      let calls = 0;
      server.bind({
        modelName: 'held_text',
        inferFunc: sample(async ({ text_input }) => {
          if (calls++ === 0) {
            hold.entered();
            await hold.released;
          }
          return { text_output: text_input! };
        }),
        inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
        outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
        config: { batching: false },
      });
      await server.run();
      const port = server.ports.openai as number;
      const open = connectorTo(port, scheme);
      const complete = (prompt: string): string => {
        const body = JSON.stringify({ model: 'held_text', prompt });
        return `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
      };

      // held: a completion in flight when the stop begins. idle: a kept-alive connection between two requests.
      // fresh: a connection whose first request comes only after the port has closed.
      const held = await open();
      const idle = await open();
      const fresh = await open();
      const heldAnswer = held.request(complete('first'));
      await hold.running;
      expect((await idle.request(get('/v1/models'))).status).toBe(200);
      // A later connection answered shows that the server has accepted `fresh`.
      expect((await (await open()).request(get('/v1/models', 'Connection: close\r\n'))).status).toBe(200);

      const stopped = server.stop();
      // Draining: a request on a kept-alive connection is refused, and the connection closed after the answer.
      expectRefused(await idle.request(complete('second')), OPENAI_STOPPING);
      expect(await idle.ended).toBe('closed');
      // The completion under way is written in full; once it is, the port closes, and its idle connection is
      // closed after the linger its client is given to come back.
      hold.release();
      const answer = await heldAnswer;
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.body) as { choices: { text: string }[] }).choices[0]!.text).toBe('first');
      await portClosed(port);
      // A connection open before the port closed gets its answer from the closed port: 503 in OpenAI's shape, for
      // /v1 and any other path alike.
      expectRefused(await fresh.request(get('/v2/health/ready')), OPENAI_STOPPING);
      expect(await fresh.ended).toBe('closed');
      expect(await held.ended).toBe('closed');
      expect(await stopped).toBe(0);
    },
  );
});
