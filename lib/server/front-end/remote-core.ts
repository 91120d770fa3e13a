import type { MessagePort } from 'node:worker_threads';
import { Cancellation } from '../../base/cancellation';
import type { TritonConfig } from '../../config/triton-config';
import { updateLogSettings, type LogSettings } from '../../logging/log-settings';
import type { Logger } from '../../logging/logger';
import type { InferenceRequest, InferenceResponse } from '../../model/inference';
import type { LoadOverride } from '../../model/model-control';
import { BufferPool, type BufferLease } from '../../tensor/buffer-pool';
import type { TraceSettings } from '../../tracing/trace';
import { headerMatcher } from '../forward-headers';
import { decodeFor, type InferCall, type ResponseSink } from '../infer-entry';
import type { RepositoryIndexEntry, ServerCore, ServerMetadata } from '../server-core';
import type { ChatMessage } from '../../model/chat-template';
import { chatTemplateOf } from '../../model/chat-template';
import { Inbox, Outbox, type RingMemory } from './hand-off';
import type { CoreMethod, FromFrontEnd, InferItem, PackedHeaders, ResultItem, ToFrontEnd } from './messages';
import { decodeOutgoing, encodeHanded, packHanded, type Handed } from './records';
import { unpackError, type PackedError } from './packed-error';
import { FrontEndSharedMemory, RemoteModels } from './core-mirrors';
import type { PublishedState } from './core-state';

/**
 * How long a statistics request waits for the core's own answer before it is answered from the statistics the
 * core last published: a core thread held by a callable that does not yield still has its statistics read.
 */
const STATISTICS_WAIT_MS = 50;


/** A request the core thread holds for this thread, until its final response or its error comes back. */
interface Pending {
  readonly sink: ResponseSink;
  readonly cancellation: Cancellation;
  readonly onCancel: () => void;
  resolve(): void;
  reject(err: Error): void;
  /** A stream's results that arrived while the sink was still writing an earlier one, in order. */
  queue?: ResultItem[];
  writing?: boolean;
}

/**
 * The server's core as a front-end thread sees it: the same `ServerCore` the transports use on the core thread,
 * so HTTP, gRPC and the OpenAI API run here unchanged. Inference requests are decoded here against the model's
 * shape the core published, then handed to the core thread, several per message; their responses come back the
 * same way. Nothing here waits on the core: liveness, readiness, the models and the shared-memory regions are
 * read from what the core publishes (core-state.ts); the rest (statistics, the index, settings, model control)
 * is asked of the core thread with a message, and answered when it answers, while this thread serves its other
 * connections. Models, batching, sequences, statistics, model control, shared-memory registrations and the
 * response cache stay one per server, on the core thread.
 */
export class RemoteCore implements ServerCore {
  readonly repository: RemoteModels;
  readonly sharedMemory: FrontEndSharedMemory;
  /** Bodies are not pooled here: a body the transport assembled for one request moves to the core thread whole. */
  readonly requestBuffers: BufferPool = new UnpooledBuffers();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private outbox: FromFrontEnd[] = [];
  /** The requests handed to the core thread, and the responses it sends back. */
  private readonly toCore: Outbox<Handed, InferItem>;
  private readonly fromCore: Inbox<ResultItem, ResultItem>;
  private flushing = false;
  private readonly forward: Readonly<Record<'HTTP' | 'GRPC', ((name: string) => boolean) | undefined>>;
  private readonly calls = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();

  constructor(
    readonly config: TritonConfig,
    private readonly published: PublishedState,
    private readonly serverMetadata: ServerMetadata,
    private readonly port: MessagePort,
    private readonly logger: Logger,
    rings: { readonly toCore: RingMemory; readonly toFrontEnd: RingMemory },
  ) {
    this.toCore = new Outbox(rings.toCore, encodeHanded, packHanded);
    this.fromCore = new Inbox(rings.toFrontEnd, decodeOutgoing, (item) => item);
    this.repository = new RemoteModels(published);
    this.sharedMemory = new FrontEndSharedMemory(config.allowSharedMemory, published, (method, ...args) => this.call(method as CoreMethod, args));
    this.forward = {
      HTTP: headerMatcher(config.httpHeaderForwardPattern, 'httpHeaderForwardPattern'),
      GRPC: headerMatcher(config.grpcHeaderForwardPattern, 'grpcHeaderForwardPattern'),
    };
  }

  /** Live as the core last said: answered by this thread, whatever the core is doing. */
  isLive(): boolean {
    return this.published.current.live;
  }

  isReady(): boolean {
    return this.published.current.ready;
  }

  metadata(): ServerMetadata {
    return this.serverMetadata;
  }

  /**
   * The core's statistics when it answers within `STATISTICS_WAIT_MS`; else the ones it last published (it
   * publishes them a few times a second while they change), so that a core held by a callable does not hold the
   * statistics endpoints too.
   */
  modelStatistics(name?: string, version?: string): Promise<Record<string, unknown>[]> {
    const asked = this.call<Record<string, unknown>[]>('modelStatistics', [name, version]);
    return new Promise((resolve, reject) => {
      const late = setTimeout(() => {
        const published = this.publishedStatistics(name, version);
        if (published) resolve(published);
      }, STATISTICS_WAIT_MS);
      asked.then(
        (stats) => {
          clearTimeout(late);
          resolve(stats);
        },
        (err: Error) => {
          clearTimeout(late);
          reject(err);
        },
      );
    });
  }

  /** The published statistics of a model version (every ready model without a name); undefined where they have none. */
  private publishedStatistics(name?: string, version?: string): Record<string, unknown>[] | undefined {
    const snapshot = this.published.statistics();
    if (snapshot === undefined) return undefined;
    if (name === undefined) return [...snapshot.modelStats];
    let model;
    try {
      model = this.repository.get(name, version);
    } catch {
      return undefined; // the core's answer says why
    }
    const entry = snapshot.modelStats.find((s) => s.name === model.name && s.version === model.version);
    return entry === undefined ? undefined : [entry];
  }

  repositoryIndex(readyOnly?: boolean): Promise<RepositoryIndexEntry[]> {
    return this.call('repositoryIndex', [readyOnly]);
  }

  traceSettings(model?: string, update?: Readonly<Record<string, unknown>>): Promise<TraceSettings> {
    return this.call('traceSettings', [model, update]);
  }

  async logSettings(update?: Readonly<Record<string, unknown>>): Promise<LogSettings> {
    const settings = await this.call<LogSettings>('logSettings', [update]);
    // This thread logs too: it follows the core's settings.
    if (update) updateLogSettings(this.logger, { log_verbose_level: settings.log_verbose_level, log_info: settings.log_info, log_warning: settings.log_warning, log_error: settings.log_error });
    return settings;
  }

  /** Applies a chat template string here; a template that is a function of the user's runs in the core. */
  chatPrompt(modelName: string, messages: () => readonly ChatMessage[]): string | Promise<string> {
    const template = chatTemplateOf(this.repository.get(modelName));
    return template.text === undefined ? this.call('chatPrompt', [modelName, messages()]) : template(messages());
  }

  loadModel(name: string, override?: LoadOverride): Promise<void> {
    return this.call('loadModel', [name, override]);
  }

  unloadModel(name: string, unloadDependents?: boolean): Promise<void> {
    return this.call('unloadModel', [name, unloadDependents]);
  }

  /**
   * Decodes the request here against the model's shape, then hands it to the core thread, whose entry runs it
   * (`InferEntry`); its responses come back to `sink`.
   */
  inferAsync(call: InferCall, sink: ResponseSink): Promise<void> {
    let request: InferenceRequest;
    try {
      // A core that refuses inference (starting, stopping) answers the request itself, before any lookup.
      const model = this.published.current.refusing ? this.repository.find(call.modelName, call.modelVersion) : this.repository.get(call.modelName, call.modelVersion);
      request = decodeFor(call, model);
    } catch (err) {
      return Promise.reject(err);
    }
    const id = this.nextId++;
    const settled = this.track(id, sink, request.cancellation);
    try {
      // Its bytes are copied (or moved) here: from now on the core thread holds the request, and this one does not.
      this.toCore.add({
        id,
        modelName: call.modelName,
        modelVersion: call.modelVersion,
        protocol: call.protocol,
        unaryEndpoint: call.unaryEndpoint,
        headers: call.headers && this.headersToSend(call),
        request,
      });
    } catch (err) {
      const p = this.pending.get(id) as Pending;
      this.settle(id, p);
      p.reject(err as Error);
      return settled;
    }
    this.schedule();
    return settled;
  }

  /**
   * Keeps a request's place until its end comes back: its sink, its cancellation and the promise to settle, and
   * nothing else. The closures made here see only these, so that the decoded request (its tensors) and the call
   * (the message it was decoded from) can be collected while the core thread runs it: under a flood of requests
   * that wait long in the core (sequences backlogged behind their slots) this thread would otherwise keep a second
   * copy of every one of them.
   */
  private track(id: number, sink: ResponseSink, cancellation: Cancellation): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onCancel = () => this.post({ t: 'cancel', id });
      this.pending.set(id, { sink, cancellation, onCancel, resolve, reject });
      cancellation.listen(onCancel);
    });
  }

  /** Requests handed to the core thread and not yet ended. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** The results the core thread sent: each goes to its request's sink, in order. */
  results(message: Extract<ToFrontEnd, number | { t?: undefined }>): void {
    this.fromCore.open(message, (item) => {
      const p = this.pending.get(item.id);
      if (p === undefined) return;
      if (p.writing) (p.queue ??= []).push(item);
      else this.deliver(item.id, p, item);
    });
  }

  /**
   * Hands one result to its request's sink. A stream's next result waits until the sink has taken this one (a
   * full socket holds it back); each one taken is reported to the core, which keeps a few in flight.
   */
  private deliver(id: number, p: Pending, item: ResultItem): void {
    if ('error' in item) {
      this.settle(id, p);
      p.reject(unpackError(item.error));
      return;
    }
    const response = item.response as InferenceResponse;
    if (item.final) this.settle(id, p);
    let taken: void | Promise<void>;
    try {
      taken = p.sink(response, item.final);
    } catch (err) {
      if (item.final) p.reject(err as Error);
      else this.fail(id, p, err as Error);
      return;
    }
    if (item.final) {
      if (taken) taken.then(p.resolve, p.reject);
      else p.resolve();
      return;
    }
    if (!taken) {
      this.post({ t: 'taken', id });
      return;
    }
    p.writing = true;
    taken.then(
      () => {
        p.writing = false;
        this.post({ t: 'taken', id });
        while (!p.writing && p.queue?.length) this.deliver(id, p, p.queue.shift() as ResultItem);
      },
      (err: Error) => this.fail(id, p, err),
    );
  }

  /** The core's answer to a call this thread made. */
  called(id: number, value: unknown, error?: PackedError): void {
    const c = this.calls.get(id);
    if (!c) return;
    this.calls.delete(id);
    if (error) c.reject(unpackError(error));
    else c.resolve(value);
  }

  /** Fails every request still waiting on the core thread (this thread is stopping). */
  failAll(err: Error): void {
    for (const [id, p] of [...this.pending]) {
      this.settle(id, p);
      p.reject(err);
    }
    for (const c of this.calls.values()) c.reject(err);
    this.calls.clear();
  }

  private settle(id: number, p: Pending): void {
    this.pending.delete(id);
    p.cancellation.unlisten(p.onCancel);
  }

  /** A stream whose client cannot take more: the core stops it, and the transport learns why. */
  private fail(id: number, p: Pending, err: Error): void {
    this.settle(id, p);
    this.post({ t: 'cancel', id });
    p.reject(err);
  }

  /** Asks the core thread to run `method`; settles with its answer. */
  private call<T>(method: CoreMethod, args: unknown[]): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.post({ t: 'call', id, method, args });
    });
  }

  /** Only the headers the core uses: the forwarded ones, and trace context. */
  private headersToSend(call: InferCall): PackedHeaders | undefined {
    const headers = call.headers ?? {};
    const forward = call.protocol === undefined ? undefined : this.forward[call.protocol];
    let picked: Record<string, PackedHeaders[string]> | undefined;
    for (const name in headers) {
      const value = headers[name];
      // Binary metadata is never forwarded (as forwardHeaders does), and would arrive as another type.
      if (value === undefined || Buffer.isBuffer(value)) continue;
      if (name === 'traceparent' || name === 'tracestate' || forward?.(name)) (picked ??= {})[name] = value;
    }
    return picked;
  }

  private post(message: FromFrontEnd): void {
    this.outbox.push(message);
    this.schedule();
  }

  /** What this turn of the event loop produced goes to the core thread in one message. */
  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    const handed = this.toCore.take();
    if (handed) this.port.postMessage(handed.message, handed.transfer);
    if (this.outbox.length > 0) {
      const out = this.outbox;
      this.outbox = [];
      for (const m of out) this.port.postMessage(m);
    }
  }
}

/** A pool that pools nothing: every body gets a buffer of its own, which can then move to the core thread. */
class UnpooledBuffers extends BufferPool {
  constructor() {
    super(0);
  }

  override lease(): BufferLease | undefined {
    return undefined;
  }
}
