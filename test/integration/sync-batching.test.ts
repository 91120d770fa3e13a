import { Worker } from 'node:worker_threads';
import type { ModelConfigInit } from '../../lib';
import { batch } from '../../decorators';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Requests that arrive while the first one's callable holds the event loop. */
const QUEUED = 7;
/** How long the held callable waits for the client thread before it gives up (the test then fails on its count). */
const HOLD_LIMIT_MS = 20_000;

/** Slots of the shared flags: the callable is holding the loop; the client has written every queued request. */
const ENTERED = 0;
const WRITTEN = 1;

interface Run {
  ok: number;
  failures: string[];
  /** For each hold of the event loop, whether the client had written every queued request when it ended. */
  holds: boolean[];
  executions: number;
  inferences: number;
  batchSizes: number[];
}

/**
 * Serves a synchronous `@batch` callable with `config` and sends it 1 + QUEUED requests: the first one's call holds
 * the event loop (blocked in `Atomics.wait`, as a callable computing on the main thread holds it) until the client
 * thread has written the other QUEUED requests to their sockets; then it returns. What the server does with the
 * requests that queued while its loop was held is then read from the model's statistics.
 */
async function drive(config: ModelConfigInit): Promise<Run> {
  const flags = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  const holds: boolean[] = [];
  const triton = track(loopbackTriton());
  triton.bind({
    modelName: 'hold',
    inferFunc: batch((inputs) => {
      if (holds.length === 0) {
        Atomics.store(flags, ENTERED, 1);
        Atomics.notify(flags, ENTERED);
        Atomics.wait(flags, WRITTEN, 0, HOLD_LIMIT_MS);
        holds.push(Atomics.load(flags, WRITTEN) === 1);
      }
      return { y: inputs.x! };
    }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [4] }],
    config,
  });
  await triton.run();
  try {
    const base = `http://127.0.0.1:${triton.ports.http}/v2/models/hold`;
    const body = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    const client = new Worker(CLIENT_SOURCE, { eval: true, workerData: { url: `${base}/infer`, body, queued: QUEUED, flags } });
    track({ close: () => client.terminate() });
    const load = await new Promise<{ ok: number; failures: string[] }>((resolve, reject) => {
      client.once('message', resolve);
      client.once('error', reject);
      client.once('exit', (code) => reject(new Error(`the client thread exited with code ${code} before reporting`)));
    });
    await client.terminate();
    const stats = (await (await fetch(`${base}/stats`)).json()) as {
      model_stats: { execution_count: number; inference_count: number; batch_stats: { batch_size: number }[] }[];
    };
    const s = stats.model_stats[0]!;
    return { ...load, holds, executions: s.execution_count, inferences: s.inference_count, batchSizes: s.batch_stats.map((b) => b.batch_size).sort((a, b) => a - b) };
  } finally {
    await triton.stop();
  }
}

/**
 * The client thread, in plain JavaScript since a worker evaluates source as it is. It runs off the server's event
 * loop, so it keeps sending while a synchronous callable holds that loop: one request, then, once the callable
 * holds the loop, `queued` more, each on a keep-alive connection of its own opened beforehand; when all of them are
 * handed to the OS it lets the callable return, and reports once every request is answered.
 */
const CLIENT_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const http = require('node:http');
const { url, body, queued, flags } = workerData;
const target = new URL(url);
const payload = Buffer.from(body);
const failures = [];
let ok = 0;

// One keep-alive connection per request, opened first, as a client that keeps its connections does: connections
// opened while the loop is held are accepted and read over later turns of the loop, one request at a time.
const agents = Array.from({ length: 1 + queued }, () => new http.Agent({ keepAlive: true, maxSockets: 1 }));

function live(agent) {
  return new Promise((resolve, reject) => {
    http.get({ host: target.hostname, port: target.port, path: '/v2/health/live', agent }, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

function post(agent, written) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
        headers: { 'content-type': 'application/json', 'content-length': payload.length } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode === 200) ok++;
          else if (failures.length < 5) failures.push(res.statusCode + ': ' + Buffer.concat(chunks).toString());
          resolve();
        });
      },
    );
    req.on('error', reject);
    req.on('finish', written);
    req.end(payload);
  });
}

async function main() {
  await Promise.all(agents.map(live));
  let first;
  await new Promise((written) => { first = post(agents[0], written); });
  // Blocks this thread only, until the callable holds the server's loop.
  Atomics.wait(flags, ${ENTERED}, 0, ${HOLD_LIMIT_MS});
  let pending = queued;
  const rest = agents.slice(1).map((agent) => post(agent, () => {
    if (--pending > 0) return;
    Atomics.store(flags, ${WRITTEN}, 1);
    Atomics.notify(flags, ${WRITTEN});
  }));
  await Promise.all([first, ...rest]);
  for (const agent of agents) agent.destroy();
  parentPort.postMessage({ ok, failures });
}
main().catch((err) => { throw err; });
`;

describe('dynamic batching of a synchronous in-process callable', () => {
  it('runs the requests that arrived while the callable held the event loop as one batch; without a batcher each runs alone', async () => {
    const unbatched = await drive({ maxBatchSize: 8, batcher: null });
    const batched = await drive({ maxBatchSize: 8 });
    const total = 1 + QUEUED;
    for (const run of [unbatched, batched]) {
      expect(run.failures).toEqual([]);
      expect(run.ok).toBe(total);
      expect(run.inferences).toBe(total);
      // The callable returned because the client had written every queued request, not because it gave up.
      expect(run.holds).toEqual([true]);
    }
    // Without a batcher every request is an execution of its own.
    expect(unbatched.executions).toBe(total);
    expect(unbatched.batchSizes).toEqual([1]);
    // With one, the first request ran alone and the QUEUED that waited behind it ran together.
    expect(batched.executions).toBe(2);
    expect(batched.batchSizes).toEqual([1, QUEUED]);
  });
});
