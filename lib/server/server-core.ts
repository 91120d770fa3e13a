import type { TritonConfig } from '../config/triton-config';
import type { ModelLookup } from '../model/model-view';
import type { LoadOverride, RepositoryIndexEntry } from '../model/model-control';

export type { RepositoryIndexEntry };
import type { SharedMemoryManager } from './shared-memory';
import type { BufferPool } from '../tensor/buffer-pool';
import type { LogSettings } from '../logging/log-settings';
import type { TraceSettings } from '../tracing/trace';
import type { InferCall, ResponseSink } from './infer-entry';
import type { ChatMessage } from '../model/chat-template';

/** Server metadata, as `GET /v2` and gRPC ServerMetadata return it. */
export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

/** A value, or the promise of one: what the core thread has at hand, and what a front-end thread asks it for. */
export type Awaitable<T> = T | Promise<T>;

/**
 * What the transports need from the server; `Triton` implements it, and so does a front-end thread's `RemoteCore`.
 * Transports know nothing else. What a front-end thread must ask the core thread for is `Awaitable`: the thread
 * asks without waiting and serves its other connections meanwhile; liveness, readiness, the server's metadata and
 * the models (`repository`) it reads from what the core publishes.
 */
export interface ServerCore {
  readonly config: TritonConfig;
  /** The models, as transports find them. */
  readonly repository: ModelLookup;
  /** System shared-memory regions clients registered. */
  readonly sharedMemory: SharedMemoryManager;
  /** Memory for large request messages, reused between requests (`requestBufferPoolByteSize`). */
  readonly requestBuffers: BufferPool;
  isLive(): boolean;
  isReady(): boolean;
  metadata(): ServerMetadata;
  /** Statistics of one model (or every ready model) in Triton's `model_stats` form. */
  modelStatistics(name?: string, version?: string): Awaitable<Record<string, unknown>[]>;
  /** Every bound model and its state (only the ready ones with `readyOnly`). */
  repositoryIndex(readyOnly?: boolean): Awaitable<RepositoryIndexEntry[]>;
  /** Loads a model: a bound one again after an unload, a repository one from disk or from the request's config and files. */
  loadModel(name: string, override?: LoadOverride): Promise<void>;
  /** Unloads a model (and, with `unloadDependents`, the ensembles that call it). */
  unloadModel(name: string, unloadDependents?: boolean): Promise<void>;
  /** The trace settings of `model` (or the server's); with `update`, changes them first. */
  traceSettings(model?: string, update?: Readonly<Record<string, unknown>>): Awaitable<TraceSettings>;
  /** The logging settings; with `update` (any subset), changes them first. */
  logSettings(update?: Readonly<Record<string, unknown>>): Awaitable<LogSettings>;
  /**
   * The prompt a chat makes for the latest version of `modelName`, by its chat template (`/v1/chat/completions`).
   * The model is looked up before `messages` reads the request's: a model that does not exist is the first error.
   */
  chatPrompt(modelName: string, messages: () => readonly ChatMessage[]): Awaitable<string>;
  /**
   * The one entry for inference: finds the call's model, has the transport decode the request for it, runs it
   * and hands each response to `sink`, the last one final (`InferEntry`).
   */
  inferAsync(call: InferCall, sink: ResponseSink): Promise<void>;
}

/** A transport the server starts and stops (HTTP, gRPC, metrics). */
export interface Transport {
  readonly name: string;
  /** Starts listening; resolves with the bound port. */
  start(): Promise<number>;
  /**
   * Called the moment the server starts stopping, while in-flight work drains; the port stays open (HTTP answers
   * every request from then on with `Connection: close`).
   */
  drain?(): void;
  /**
   * Refuses new connections and calls; called once in-flight inference has drained. May resolve once its
   * connections have closed (HTTP closes each after the response it is writing).
   */
  stopAccepting(): void | Promise<void>;
  /** Ends everything still open; `stop()` awaits it. */
  forceClose(): void | Promise<void>;
}
