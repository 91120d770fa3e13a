/**
 * What `tstriton perf` measures and how `tstriton analyze` asks for it. `runPerf(options, onProgress)` in
 * `lib/perf/run-perf.ts` takes `PerfOptions` and resolves with a `PerfReport`, one `PerfStep` per concurrency or
 * request rate of the sweep. The fields are perf_analyzer's, in its units (microseconds, inferences per second).
 */

/** Where to send the load, and to which model. */
export interface PerfTarget {
  /** `host:port`, as perf_analyzer's `-u`. */
  readonly url: string;
  readonly protocol: 'http' | 'grpc';
  readonly model: string;
  /** Empty for the model's latest version (`-x`). */
  readonly version?: string;
  /** Extra request headers (`-H name:value`); gRPC metadata for gRPC. */
  readonly headers?: Readonly<Record<string, string>>;
  /** HTTPS, or gRPC over TLS (perf_analyzer's `--ssl-*` flags). */
  readonly tls?: PerfTls;
}

/** TLS of the target: PEM text of the files the `--ssl-*` flags name. */
export interface PerfTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** HTTPS: check the server's certificate (default true). */
  readonly verifyPeer?: boolean;
  /** HTTPS: check the certificate's name against the host (default true). */
  readonly verifyHost?: boolean;
}

/** One point of the load: a closed loop of `concurrency` outstanding requests, or an open loop at `requestRate`. */
export type PerfLoad =
  | { readonly kind: 'concurrency'; readonly concurrency: number }
  | { readonly kind: 'request-rate'; readonly requestRate: number; readonly distribution: 'constant' | 'poisson' };

/** Latencies of the successful requests of one step, client side, in microseconds. */
export interface PerfLatency {
  readonly avg: number;
  readonly min: number;
  readonly max: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  /** Standard deviation. */
  readonly std: number;
}

/** The server's side of one step, from the statistics extension's counters before and after it (averages per request, microseconds). */
export interface PerfServerSide {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly successCount: number;
  readonly queueUs: number;
  readonly computeInputUs: number;
  readonly computeInferUs: number;
  readonly computeOutputUs: number;
  readonly cacheHitCount?: number;
  /** Average time from the request's arrival to its response (the `success` counter), microseconds. */
  readonly requestUs?: number;
  /** `requestUs` less queue and compute: the server's own handling, microseconds. */
  readonly overheadUs?: number;
}

/** One step of the sweep, over its last (stable) measurement window. */
export interface PerfStep {
  readonly load: PerfLoad;
  /** Inferences per second (requests × batch size). */
  readonly throughput: number;
  readonly requests: number;
  readonly errors: number;
  readonly latencyUs: PerfLatency;
  /** The server's side; absent when the server has no statistics extension. */
  readonly server?: PerfServerSide;
  /** Whether the last `stabilityWindows` windows agreed within `stabilityPercentage`. */
  readonly stable: boolean;
  /** Length of the measured window, milliseconds. */
  readonly windowMs: number;
  /** `--percentile`'s latency of the successful requests, microseconds, when one was asked for. */
  readonly percentileUs?: number;
  /** Average time the client spent sending a request (writing its pre-encoded bytes), microseconds. */
  readonly clientSendUs?: number;
  /** CPU time the load threads spent per request, microseconds: what the client itself costs. */
  readonly clientCpuUsPerRequest?: number;
  /**
   * An open loop on a sequence model: requests of the windows sent later than due because each sequence had one in
   * flight (a sequence has one request outstanding at a time); absent when none was.
   */
  readonly delayedRequests?: number;
  /** Requests the step completed in all, every window and the requests in flight at its end included. */
  readonly completedRequests?: number;
  /** The first failure of the step's windows, in words. */
  readonly firstError?: string;
}

/** What one run of `tstriton perf` resolved with. */
export interface PerfReport {
  readonly target: PerfTarget;
  readonly batchSize: number;
  readonly steps: readonly PerfStep[];
}

/** How a run is measured; the flags of `tstriton perf` map onto these. */
export interface PerfOptions {
  readonly target: PerfTarget;
  /** `-b`. */
  readonly batchSize?: number;
  /** The sweep, in order. */
  readonly loads: readonly PerfLoad[];
  /** `-p` / `--measurement-interval`, milliseconds. */
  readonly measurementIntervalMs?: number;
  readonly stabilityPercentage?: number;
  readonly maxTrials?: number;
  /** `--percentile`: the latency the stability check and the summary line use; average when absent. */
  readonly percentile?: number;
  /** `--shape NAME:d1,d2` for variable dimensions. */
  readonly shapes?: Readonly<Record<string, readonly number[]>>;
  /** `--input-data`. */
  readonly inputData?: 'zero' | 'random' | { readonly file: string };
  /** HTTP: inputs in the binary tensor extension (default) or as JSON (`--input-tensor-format`). */
  readonly inputTensorFormat?: 'binary' | 'json';
  /** HTTP: outputs in the binary tensor extension (default) or as JSON (`--output-tensor-format`). */
  readonly outputTensorFormat?: 'binary' | 'json';
  /** gRPC: send over ModelStreamInfer streams (`--streaming`). */
  readonly streaming?: boolean;
  /** Inputs and outputs in system shared memory registered with the server (`--shared-memory system`), or in the messages (default). */
  readonly sharedMemory?: 'none' | 'system';
  /** `--output-shared-memory-size`: bytes of an output's region where the model's shape does not fix its size. */
  readonly outputSharedMemorySize?: number;
  /** Requests per sequence for a model with a sequence batcher (`--sequence-length`, default 20). */
  readonly sequenceLength?: number;
  /** The first sequence id (`--sequence-id-range start`, default 1); lane `i` uses `start + i`. */
  readonly sequenceIdStart?: number;
  /** Sequences an open loop (`--request-rate-range`) keeps going on a sequence model (`--num-of-sequences`, default 4). */
  readonly numOfSequences?: number;
  /** Load threads (`--max-threads`); default half the usable cores, 1 to 4. */
  readonly maxThreads?: number;
  /** Abort the run; a step under way ends and the steps so far are kept. */
  readonly signal?: AbortSignal;
}

/** Progress of a run, for a terminal line or `analyze`'s progress bar. */
export interface PerfProgress {
  readonly stepIndex: number;
  readonly stepCount: number;
  readonly load: PerfLoad;
  readonly trial: number;
  readonly requestsSoFar: number;
  /** Set on the report that ends a step: what the step measured. */
  readonly step?: PerfStep;
}
