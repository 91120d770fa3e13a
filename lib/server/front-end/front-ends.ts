import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { Cancellation } from '../../base/cancellation';
import { threadEntry } from '../../base/thread-entry';
import type { TritonConfig, TritonConfigInit } from '../../config/triton-config';
import { requestCancelled, TritonError } from '../../base/errors';
import type { Logger } from '../../logging/logger';
import type { ChatMessage } from '../../model/chat-template';
import type { LoadOverride } from '../../model/model-control';
import type { ModelRepository } from '../../model/model-repository';
import type { InferCall, ResponseSink } from '../infer-entry';
import type { ServerCore, Transport } from '../server-core';
import { frontEndResourceLimits } from './front-end-heap';
import type { FrontEndInit } from './front-end-thread';
import { Inbox, Outbox, ringMemory, type RingMemory } from './hand-off';
import { unpackRequest, type CoreMethod, type FromFrontEnd, type InferItem, type Phase, type Ports, type ResultItem, type ToFrontEnd } from './messages';
import { decodeHanded, encodeOutgoing, packOutgoing, type Outgoing } from './records';
import { packError } from './packed-error';
import { StatePublisher } from './state-publisher';

/** The most front-end threads `httpThreadCount: 0` picks. */
const MAX_AUTO_THREADS = 8;

/**
 * How many front-end threads a server runs: `httpThreadCount`, or for 0 one per core beyond the core thread's
 * own, at most 8 (one on a machine of one or two cores: the ports are then served on the core thread). The
 * cores are the CPUs the process may run on, or fewer where its cgroup's CPU quota allows fewer (a container's
 * CPU limit).
 */
export function frontEndThreadCount(config: TritonConfig, cores = usableCores()): number {
  if (config.httpThreadCount > 0) return config.httpThreadCount;
  return Math.max(1, Math.min(MAX_AUTO_THREADS, cores - 1));
}

/** The CPUs this process may use: its affinity, bounded by its cgroup's CPU quota (cgroup v2 `cpu.max`). */
export function usableCores(cpuMax = readCpuMax()): number {
  const quota = cpuQuota(cpuMax);
  return Math.max(1, Math.min(availableParallelism(), quota ?? Infinity));
}

/**
 * The whole CPUs a cgroup v2 `cpu.max` line allows (`<quota> <period>` in µs, or `max <period>`): quota ÷ period,
 * rounded down, at least 1; undefined for no limit or a line that does not parse.
 */
export function cpuQuota(cpuMax: string | undefined): number | undefined {
  const [quota, period] = (cpuMax ?? '').trim().split(/\s+/);
  const q = Number(quota);
  const p = Number(period);
  if (quota === 'max' || !(q > 0) || !(p > 0)) return undefined;
  return Math.max(1, Math.floor(q / p));
}

function readCpuMax(): string | undefined {
  try {
    return readFileSync('/sys/fs/cgroup/cpu.max', 'utf8');
  } catch {
    return undefined;
  }
}

/** Whether this Node can listen on one port from several threads (`reusePort`: Node 22.12+, 23.1+, Linux and others). */
export function reusePortSupported(version = process.versions.node, platform = process.platform): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const node = major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
  // SO_REUSEPORT spreads connections over the listeners on Linux, FreeBSD and the others Node supports it on,
  // but not on Windows, macOS or AIX.
  return node && platform !== 'win32' && platform !== 'darwin' && platform !== 'aix';
}

/** A request a front-end thread handed over, while the core runs it. */
interface Live {
  readonly cancellation: Cancellation;
  /**
   * Releases a decoupled model's next response once the thread has written this one; with an error when the
   * request was cancelled or its thread ended, which ends the stream.
   */
  release?: (err?: Error) => void;
  /** A stream's responses posted to the thread and not yet written there. */
  unwritten: number;
}

/**
 * How many responses of one decoupled stream may be on their way to, or waiting in, its front-end thread before
 * the model's next response waits: enough that a stream of small responses does not wait for a round trip
 * between threads per response, few enough that a client that reads slowly holds back the model.
 */
const STREAM_WINDOW = 16;

/** Cancels a request the core holds for a thread, failing the response it waits to have written. */
function cancel(live: Live | undefined, reason: TritonError): void {
  if (live === undefined) return;
  live.cancellation.abort(reason);
  const release = live.release;
  live.release = undefined;
  release?.(reason);
}

/** A thread's answer to being told to listen or to take a step of the stop. */
type Answer = Extract<FromFrontEnd, { readonly t: 'listening' | 'failed' | 'done' }>;

/** One front-end thread, as the core thread drives it. */
class FrontEndThread {
  readonly live = new Map<number, Live>();
  /** The requests the thread hands over, and the responses going back. */
  readonly inbox: Inbox<InferItem, InferItem>;
  private readonly outbox: Outbox<Outgoing, ResultItem>;
  private flushing = false;
  private readonly waiting = new Map<string, (message: Answer | undefined) => void>();
  exited = false;

  constructor(
    readonly index: number,
    readonly worker: Worker,
    readonly statePort: MessagePort,
    rings: { readonly toCore: RingMemory; readonly toFrontEnd: RingMemory },
  ) {
    this.inbox = new Inbox(rings.toCore, decodeHanded, (item) => item);
    this.outbox = new Outbox(rings.toFrontEnd, encodeOutgoing, packOutgoing);
    worker.on('exit', () => {
      this.exited = true;
      for (const resolve of this.waiting.values()) resolve(undefined);
      this.waiting.clear();
    });
  }

  send(message: ToFrontEnd): void {
    if (!this.exited) this.worker.postMessage(message);
  }

  /** Queues a result, its bytes copied now; what a turn of the event loop produced goes in one message. */
  result(item: Outgoing): void {
    this.outbox.add(item);
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const out = this.outbox.take();
      if (out && !this.exited) this.worker.postMessage(out.message, out.transfer);
    });
  }

  /** Resolves with the thread's answer of kind `t` (undefined if it exits first). */
  answer(t: 'listening' | 'done'): Promise<Answer | undefined> {
    if (this.exited) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiting.set(t, resolve));
  }

  answered(t: string, message: Answer): void {
    const resolve = this.waiting.get(t);
    this.waiting.delete(t);
    resolve?.(message);
  }
}

/** What the front-end threads need of the server beyond `ServerCore`: its models themselves. */
export interface FrontEndHost {
  readonly core: ServerCore;
  readonly repository: ModelRepository;
  /** Why the core takes no inference now (starting, stopping); undefined while it runs. */
  readonly refusal: () => TritonError | undefined;
  readonly config: TritonConfig;
  readonly logger: Logger;
}

/**
 * The server's front ends on N threads (`httpThreadCount`): each thread listens on the HTTP and gRPC ports beside
 * the others (`reusePort`), parses, decodes, encodes and writes; this side, on the core thread, runs what they hand
 * over through the core's one entry and answers their synchronous questions. `transports()` gives the server the
 * `http` and `grpc` transports it starts and stops in order.
 */
export class FrontEnds {
  private readonly threads: FrontEndThread[] = [];
  private readonly counters = new SharedArrayBuffer(4);
  /** What the threads read of the core without asking it. */
  private readonly publisher: StatePublisher;
  /** What the threads ask the core to run for them. */
  private readonly calls: Readonly<Record<CoreMethod, (...args: never[]) => unknown>>;
  private started: Promise<Ports> | undefined;
  private readonly phases = new Map<Phase, Promise<void>>();
  private stopping = false;

  constructor(
    private readonly host: FrontEndHost,
    readonly count: number,
  ) {
    this.publisher = new StatePublisher(host, new Int32Array(this.counters));
    this.calls = this.coreCalls();
  }

  /** The `http`, `openai` and `grpc` transports, all served by the same threads. */
  transports(): Transport[] {
    const { config } = this.host;
    const facade = (name: keyof Ports): Transport => ({
      name,
      start: () => this.start().then((ports) => ports[name] as number),
      drain: () => void this.phase('drain'),
      stopAccepting: () => this.phase('stopAccepting'),
      forceClose: () => this.phase('forceClose'),
    });
    const names: (keyof Ports)[] = [];
    if (config.allowHttp) names.push('http');
    if (config.openai && config.openaiPort >= 0) names.push('openai');
    if (config.allowGrpc) names.push('grpc');
    return names.map(facade);
  }

  private start(): Promise<Ports> {
    this.started ??= this.spawnAll();
    return this.started;
  }

  private async spawnAll(): Promise<Ports> {
    const { config } = this.host;
    const wanted: Ports = {
      http: config.allowHttp ? config.httpPort : undefined,
      grpc: config.allowGrpc ? config.grpcPort : undefined,
      openai: config.openai && config.openaiPort >= 0 ? config.openaiPort : undefined,
    };
    // The first thread binds the ports (0 picks free ones); the others then listen on the same ones.
    const first = this.spawn(0);
    const ports = await this.listen(first, wanted);
    await Promise.all(Array.from({ length: this.count - 1 }, (_, i) => this.listen(this.spawn(i + 1), ports)));
    this.host.logger.info({ threads: this.count, ports }, 'front-end threads listening');
    return ports;
  }

  private async listen(thread: FrontEndThread, ports: Ports): Promise<Ports> {
    const answer = thread.answer('listening');
    thread.send({ t: 'listen', ports, reusePort: true });
    const message = await answer;
    if (message?.t === 'listening') return message.ports;
    const why = message?.t === 'failed' ? message.error.message : 'the thread ended before it listened';
    throw new TritonError('INTERNAL', `front-end thread ${thread.index} could not listen: ${why}`);
  }

  private spawn(index: number): FrontEndThread {
    const { port1, port2 } = new MessageChannel();
    const rings = { toCore: ringMemory(), toFrontEnd: ringMemory() };
    const init: FrontEndInit = {
      config: configData(this.host.config),
      metadata: this.host.core.metadata(),
      statePort: port2,
      state: this.publisher.current(),
      counters: this.counters,
      rings,
    };
    const { filename, execArgv } = threadEntry(__dirname, 'front-end-thread', __filename);
    const worker = new Worker(filename, { workerData: init, transferList: [port2], execArgv, name: `tstriton-fe-${index}`, resourceLimits: frontEndResourceLimits(this.host.config.httpThreadYoungGenerationMegabytes) } as ConstructorParameters<typeof Worker>[1]);
    const thread = new FrontEndThread(index, worker, port1, rings);
    this.threads[index] = thread;
    this.publisher.add(port1);
    port1.unref();
    worker.on('message', (message: FromFrontEnd) => this.onMessage(thread, message));
    worker.on('error', (err) => this.host.logger.error({ err, thread: index }, 'front-end thread failed'));
    worker.on('exit', (code) => this.onExit(thread, code));
    return thread;
  }

  /** A thread that ended on its own: what it held is cancelled, and (while serving) a new one takes its place. */
  private onExit(thread: FrontEndThread, code: number): void {
    this.publisher.remove(thread.statePort);
    thread.statePort.close();
    for (const live of thread.live.values()) cancel(live, new TritonError('UNAVAILABLE', 'the front-end thread of this request ended'));
    thread.live.clear();
    if (this.stopping || this.threads[thread.index] !== thread) return;
    this.host.logger.error({ thread: thread.index, code }, 'front-end thread ended: starting another');
    void this.started?.then((ports) => this.listen(this.spawn(thread.index), ports)).catch((err: unknown) => this.host.logger.error({ err }, 'front-end thread could not be replaced'));
  }

  private onMessage(thread: FrontEndThread, message: FromFrontEnd): void {
    if (typeof message === 'number' || message.t === undefined) {
      thread.inbox.open(message, (item) => this.infer(thread, item));
      return;
    }
    switch (message.t) {
      case 'cancel':
        cancel(thread.live.get(message.id), requestCancelled());
        return;
      case 'taken': {
        const live = thread.live.get(message.id);
        if (live === undefined) return;
        live.unwritten--;
        const release = live.release;
        live.release = undefined;
        release?.();
        return;
      }
      case 'call':
        this.call(message.method, message.args).then(
          (value) => thread.send({ t: 'called', id: message.id, value }),
          (err: unknown) => thread.send({ t: 'called', id: message.id, error: packError(err) }),
        );
        return;
      case 'listening':
      case 'failed':
        thread.answered('listening', message);
        return;
      case 'done':
        thread.answered('done', message);
        return;
    }
  }

  /** Runs a request a thread handed over through the core's entry; its responses and its end go back to it. */
  private infer(thread: FrontEndThread, item: InferItem): void {
    const cancellation = new Cancellation();
    const live: Live = { cancellation, unwritten: 0 };
    thread.live.set(item.id, live);
    const request = unpackRequest(item.request, cancellation);
    const call: InferCall = {
      modelName: item.modelName,
      modelVersion: item.modelVersion,
      protocol: item.protocol,
      unaryEndpoint: item.unaryEndpoint,
      headers: item.headers,
      decode: () => request,
    };
    const sink: ResponseSink = (response, final) => {
      thread.result({ id: item.id, response, final });
      if (final || ++live.unwritten < STREAM_WINDOW) return;
      return new Promise<void>((resolve, reject) => (live.release = (err) => (err ? reject(err) : resolve())));
    };
    this.host.core.inferAsync(call, sink).then(
      () => thread.live.delete(item.id),
      (err: unknown) => {
        thread.live.delete(item.id);
        thread.result({ id: item.id, error: packError(err) });
      },
    );
  }

  /**
   * Runs a call a thread made; what it changed is published before it is answered (the answer goes after the
   * state, so the thread that asked reads the change as soon as it has its answer).
   */
  private async call(method: CoreMethod, args: readonly unknown[]): Promise<unknown> {
    const handler = this.calls[method] as ((...a: readonly unknown[]) => unknown) | undefined;
    if (handler === undefined) throw new TritonError('INTERNAL', `unknown core call '${method}'`);
    try {
      return await handler(...args);
    } finally {
      this.publisher.publish();
    }
  }

  /** The calls a front-end thread makes, answered from the core's own state. */
  private coreCalls(): Readonly<Record<CoreMethod, (...args: never[]) => unknown>> {
    const { core } = this.host;
    return {
      modelStatistics: (name?: string, version?: string) => {
        const stats = core.modelStatistics(name, version);
        this.publisher.publishStatistics(true);
        return stats;
      },
      repositoryIndex: (readyOnly?: boolean) => core.repositoryIndex(readyOnly),
      traceSettings: (model?: string, update?: Readonly<Record<string, unknown>>) => core.traceSettings(model, update),
      logSettings: (update?: Readonly<Record<string, unknown>>) => core.logSettings(update),
      chatPrompt: (name: string, messages: readonly ChatMessage[]) => core.chatPrompt(name, () => messages),
      loadModel: (name: string, override?: LoadOverride) => {
        // The files of a load request cross as plain bytes: Buffers again here.
        const files = override?.files && Object.fromEntries(Object.entries(override.files).map(([k, v]) => [k, Buffer.from(v.buffer, v.byteOffset, v.byteLength)]));
        return core.loadModel(name, override && { ...override, ...(files ? { files } : {}) });
      },
      unloadModel: (name: string, unloadDependents?: boolean) => core.unloadModel(name, unloadDependents),
      // Published with the regions once registered (call()).
      shmRegister: (name: string, key: string, offset: number, byteSize: number) => core.sharedMemory.register(name, key, offset, byteSize),
      shmUnregister: (name?: string) => core.sharedMemory.unregister(name),
    };
  }

  /** One step of the stop, taken by every thread; the second call of a step waits on the first. */
  private phase(step: Phase): Promise<void> {
    this.stopping = true;
    let running = this.phases.get(step);
    if (running === undefined) {
      running = this.runPhase(step);
      this.phases.set(step, running);
    }
    return running;
  }

  private async runPhase(step: Phase): Promise<void> {
    if (this.started) await this.started.catch(() => undefined);
    // The threads answer readiness from what was published: not ready from the first step on.
    this.publisher.publish();
    if (step === 'forceClose') this.publisher.close();
    await Promise.all(
      this.threads.map((thread) => {
        const done = thread.answer('done');
        thread.send({ t: 'phase', phase: step });
        return done;
      }),
    );
    if (step === 'forceClose') await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }
}

/** The settings as plain data (what crosses to a thread). */
function configData(config: TritonConfig): TritonConfigInit {
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) if (typeof value !== 'function' && value !== undefined) data[key] = value;
  return data as TritonConfigInit;
}

