import { fork, type ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../lib/server/grpc/protos';
import type { ModelInferResponseMessage } from '../../lib/server/grpc/messages';

// SIGTERM under load, against a server in a process of its own that stops through serve(): every request gets
// its answer (200 with the right numbers, or 503 / UNAVAILABLE once the server stops), no connection is reset,
// and the process exits 0.
jest.setTimeout(60_000);

const ROOT = join(__dirname, '..', '..');
const CLIENTS = 16;
/** Responses every client must have had before the signal, so that the signal lands under full load. */
const BEFORE_SIGNAL = 5;

interface Ports {
  http: number;
  grpc: number;
}

function startServer(): Promise<{ child: ChildProcess; ports: Ports; exited: Promise<number | null> }> {
  const child = fork(join(ROOT, 'test/fixtures/drain/server.js'), ['20'], {
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

const INFER_BODY = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] });

function httpPost(agent: http.Agent, port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: '/v2/models/double/infer', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(INFER_BODY) } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(INFER_BODY);
  });
}

/** One keep-alive HTTP client sending requests back to back until the server refuses one or the connection fails. */
async function httpClient(port: number, tally: Tally, warm: () => void): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let answers = 0;
  try {
    for (;;) {
      let res: { status: number; body: string };
      try {
        res = await httpPost(agent, port);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ECONNREFUSED') tally.connectionRefused++;
        else tally.lost.push(`HTTP ${code ?? ''} ${(err as Error).message}`);
        return;
      }
      if (++answers === BEFORE_SIGNAL) warm();
      if (res.status === 503) {
        tally.refused++;
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
