import { Worker } from 'node:worker_threads';

/** What a closed loop of requests measured. */
export interface ClosedLoopResult {
  /** Requests answered with HTTP 200. */
  ok: number;
  /** Other answers, as "status: body" (the first few). */
  failures: string[];
  /** Wall time from the first request to the last response, ms. */
  elapsedMs: number;
}

/**
 * Drives `url` with `concurrency` keep-alive HTTP/1.1 connections, each posting `body` `perConnection` times, one
 * request at a time (a closed loop, as perf_analyzer's concurrency mode does).
 *
 * The loop runs on a thread of its own: a model whose callable computes synchronously blocks the server's event
 * loop, and clients on that loop would be blocked with it, which would change the arrival pattern under test.
 */
export function closedLoop(url: string, body: string, concurrency: number, perConnection: number): Promise<ClosedLoopResult> {
  const worker = new Worker(LOOP_SOURCE, { eval: true, workerData: { url, body, concurrency, perConnection } });
  return new Promise((resolve, reject) => {
    worker.once('message', (result: ClosedLoopResult) => {
      void worker.terminate();
      resolve(result);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the load thread exited with code ${code} before reporting`)));
  });
}

/** The load thread, in plain JavaScript since a worker evaluates source as it is. */
const LOOP_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const http = require('node:http');
const { url, body, concurrency, perConnection } = workerData;
const target = new URL(url);
const payload = Buffer.from(body);
const failures = [];
let ok = 0;

function post(agent) {
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
    req.end(payload);
  });
}

async function connection() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < perConnection; i++) await post(agent);
  agent.destroy();
}

const start = performance.now();
Promise.all(Array.from({ length: concurrency }, connection)).then(
  () => parentPort.postMessage({ ok, failures, elapsedMs: performance.now() - start }),
  (err) => { throw err; },
);
`;
