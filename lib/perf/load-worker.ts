/**
 * A load thread of `tstriton perf`: it sends the pre-encoded requests it is given over its own connections, in a
 * closed loop (each lane sends again as soon as its answer is in) or an open loop (requests started at a rate,
 * constant or Poisson), and keeps, for each request completed, its end time, latency and send time until the main
 * thread collects them. Nothing here encodes or decodes a tensor: the hot loop is a write and a header scan.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { GrpcLoadChannel } from './grpc-load-connection';
import { HttpLoadConnection } from './http-load-connection';
import type { ConnectionFactory, LoadConnection } from './load-connection';
import { SequenceLanes } from './sequence-lanes';
import { RECORD_FIELDS, type FromLoadWorker, type LoadWorkerInit, type StepRequests, type ToLoadWorker } from './load-messages';

const port = parentPort;
if (!port) throw new Error('load-worker.ts runs as a worker thread of tstriton perf');
const init = workerData as LoadWorkerInit;
const post = (message: FromLoadWorker, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

const channel = init.target.protocol === 'grpc' ? new GrpcLoadChannel(init.target) : undefined;
const open: ConnectionFactory = channel
  ? init.target.streaming
    ? () => channel.stream()
    : () => channel.unary()
  : () => new HttpLoadConnection(init.target);

/** Connections not carrying a request, kept from step to step. */
const idle: LoadConnection[] = [];
let records = new Float64Array(RECORD_FIELDS * 4096);
let count = 0;
let completed = 0;
let firstError: string | undefined;
let inFlight = 0;
let running = false;
/** This thread's CPU time; Node releases without `threadCpuUsage` give the process's. */
const cpuUsage = (since?: NodeJS.CpuUsage): NodeJS.CpuUsage => (typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage(since) : process.cpuUsage(since));
let cpu = cpuUsage();
let openLoopTimer: NodeJS.Timeout | undefined;
/** The open loop's sequences, for a sequence model. */
let sequences: SequenceLanes | undefined;

/** Sends `request` on `connection` and records its answer; `then` runs after, with the connection free again. */
function issue(connection: LoadConnection, request: Uint8Array, then: (connection: LoadConnection) => void): void {
  inFlight++;
  const start = performance.now();
  connection.send(request, (problem) => {
    const end = performance.now();
    inFlight--;
    completed++;
    if (problem !== undefined) firstError ??= problem;
    record(end, problem === undefined ? (end - start) * 1000 : -(end - start) * 1000, sent - start);
    then(connection);
  });
  const sent = performance.now();
}

function record(end: number, latencyUs: number, sendMs: number): void {
  if ((count + 1) * RECORD_FIELDS > records.length) {
    const grown = new Float64Array(records.length * 2);
    grown.set(records);
    records = grown;
  }
  const at = count * RECORD_FIELDS;
  records[at] = performance.timeOrigin + end;
  records[at + 1] = latencyUs;
  records[at + 2] = sendMs * 1000;
  count++;
}

/** The request lane `lane` sends as its `n`th. */
function requestOf(requests: StepRequests, lane: number, n: number): Uint8Array {
  if ('shared' in requests) return requests.shared[(lane + n) % requests.shared.length] as Uint8Array;
  const own = requests.perLane[lane] as readonly Uint8Array[];
  return own[n % own.length] as Uint8Array;
}

function startClosed(lanes: number, requests: StepRequests): void {
  for (let lane = 0; lane < lanes; lane++) {
    let n = 0;
    const next = (connection: LoadConnection): void => {
      if (running) issue(connection, requestOf(requests, lane, n++), next);
      else release(connection);
    };
    next(idle.pop() ?? open());
  }
}

function startOpen(rate: number, distribution: 'constant' | 'poisson', requests: StepRequests): void {
  const interval = 1000 / rate;
  const gap = distribution === 'constant' ? () => interval : () => -Math.log(1 - Math.random()) * interval;
  const send = 'shared' in requests ? sendShared(requests) : sendOnSequences(requests);
  let due = performance.now();
  const tick = (): void => {
    openLoopTimer = undefined;
    if (!running) return;
    const now = performance.now();
    while (due <= now) {
      send();
      due += gap();
    }
    openLoopTimer = setTimeout(tick, Math.max(0, due - performance.now()));
  };
  tick();
}

/** The open loop's send for a model without sequences: the requests in turn, each on a free connection. */
function sendShared(requests: StepRequests): () => void {
  let n = 0;
  return () => issue(idle.pop() ?? open(), requestOf(requests, 0, n++), release);
}

/**
 * The open loop's send for a sequence model: each lane is a sequence, sent in order with one request in flight
 * (SequenceLanes); a request held while every sequence was busy goes out on the connection that just answered.
 */
function sendOnSequences(requests: Extract<StepRequests, { perLane: unknown }>): () => void {
  const lanes = new SequenceLanes(requests.perLane.length);
  sequences = lanes;
  const sent = requests.perLane.map(() => 0);
  const sendOn = (lane: number, connection: LoadConnection): void => {
    issue(connection, requestOf(requests, lane, (sent[lane] as number)++), (free) => {
      if (running && lanes.answered(lane)) sendOn(lane, free);
      else release(free);
    });
  };
  return () => {
    const lane = lanes.due();
    if (lane !== undefined) sendOn(lane, idle.pop() ?? open());
  };
}

function release(connection: LoadConnection): void {
  idle.push(connection);
  if (!running && inFlight === 0) post({ t: 'stopped' });
}

function collect(): void {
  const used = cpuUsage(cpu);
  cpu = cpuUsage();
  const out = records.slice(0, count * RECORD_FIELDS);
  const delayed = sequences?.takeDelayed() ?? 0;
  post({ t: 'records', records: out, count, cpuUs: used.user + used.system, delayed, ...(firstError !== undefined && { firstError }) }, [out.buffer]);
  count = 0;
  firstError = undefined;
}

port.on('message', (message: ToLoadWorker) => {
  switch (message.t) {
    case 'closed':
    case 'open':
      running = true;
      sequences = undefined;
      if (message.t === 'closed') startClosed(message.lanes, message.requests);
      else startOpen(message.rate, message.distribution, message.requests);
      break;
    case 'collect':
      collect();
      break;
    case 'stop':
      running = false;
      if (openLoopTimer) clearTimeout(openLoopTimer);
      openLoopTimer = undefined;
      if (inFlight === 0) post({ t: 'stopped' });
      break;
    case 'close':
      for (const connection of idle.splice(0)) connection.close();
      channel?.close();
      port.close();
      break;
  }
});

if (init.progressMs > 0) setInterval(() => post({ t: 'progress', completed }), init.progressMs).unref();
post({ t: 'ready' });
