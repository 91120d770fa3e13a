import type { ModelConfigJson } from '../config/triton-model-config';
import type { PerfOptions, PerfStep } from '../perf/perf-types';
import type { runPerf } from '../perf/run-perf';
import type { Candidate } from './candidate';
import type { ServedSource } from './candidate-server';
import type { Objective } from './objective';
import type { SearchBounds, SearchSpace } from './search-space';

/** The measurement `tstriton analyze` runs against each candidate: `runPerf` of `tstriton perf`, or one like it. */
export type MeasureFn = typeof runPerf;

/** How the load of each candidate is made and measured. */
export interface LoadSettings {
  readonly protocol: 'http' | 'grpc';
  /** Rows per request (perf_analyzer's `-b`). */
  readonly batchSize: number;
  /** The concurrency sweep, rising. */
  readonly concurrency: readonly number[];
  readonly measurementIntervalMs: number;
  readonly maxTrials: number;
  readonly stabilityPercentage: number;
  /** How long each candidate is loaded before it is measured, milliseconds. */
  readonly warmupMs: number;
  readonly shapes?: Readonly<Record<string, readonly number[]>>;
  readonly inputData?: PerfOptions['inputData'];
}

/** Everything a run of `tstriton analyze` is told. */
export interface AnalyzeOptions {
  readonly source: ServedSource;
  readonly models: readonly string[];
  readonly search: 'quick' | 'brute';
  /** The bounds; `kinds` undefined: the CPU and every GPU nvidia-smi lists. */
  readonly bounds: Omit<SearchBounds, 'kinds'> & { readonly kinds?: readonly string[] };
  readonly objective: Objective;
  readonly load: LoadSettings;
  /** The whole run's time, milliseconds. */
  readonly timeBudgetMs: number;
  /** Where the servers' generated files go. */
  readonly workDir: string;
  /** How long a server may take to serve, milliseconds. */
  readonly startTimeoutMs: number;
}

/** One step of a candidate's sweep, with what its server used meanwhile. */
export interface MeasuredStep {
  readonly step: PerfStep;
  /** The server's CPU over the step, percent of one core. */
  readonly cpuPercent?: number;
  /** The load generator's CPU over the step, percent of one core (`sampleLoadGenerator`). */
  readonly loadCpuPercent?: number;
  /** The server's resident memory at the end of the step, bytes. */
  readonly rssBytes?: number;
}

/** What was measured of one candidate. */
export interface CandidateResult {
  readonly candidate: Candidate;
  /** The model as bound (its own config, the server's default threads). */
  readonly isDefault: boolean;
  readonly steps: readonly MeasuredStep[];
  /** The index in `steps` of the best step under the objective; -1 when none meets it. */
  readonly best: number;
  /** Why the candidate could not be measured (its server did not start, every request failed). */
  readonly error?: string;
  /** The model config the candidate's server served. */
  readonly servedConfig?: ModelConfigJson;
  /** Wall time from its server's start to its stop, milliseconds. */
  readonly durationMs: number;
}

/** The analysis of one model. */
export interface ModelAnalysis {
  readonly model: string;
  /** The model as bound, in the terms of a candidate. */
  readonly base: Candidate;
  readonly space: SearchSpace;
  /** In the order measured; the first is the model as bound. */
  readonly results: readonly CandidateResult[];
  /** The best of the search and the model as bound, measured again back to back; absent when not done. */
  readonly confirmation?: Confirmation;
}

/** The best candidate of a search measured again right after the model as bound, each at its best step's concurrency and the one below it. */
export interface Confirmation {
  readonly asBound: CandidateResult;
  readonly best: CandidateResult;
  /** The length of their windows, milliseconds. */
  readonly windowMs: number;
}

/** What a run of `tstriton analyze` found, as far as it got. */
export interface AnalyzeRun {
  readonly options: AnalyzeOptions;
  readonly models: readonly ModelAnalysis[];
  /** Stopped by SIGINT before the search was done. */
  readonly interrupted: boolean;
  /** The time budget ran out before the search was done. */
  readonly outOfTime: boolean;
  readonly elapsedMs: number;
  /** The cores of the machine the run measured on (server and load generator shared them). */
  readonly cores: number;
}

/** What the progress bar is told. */
export interface AnalyzeProgress {
  readonly model: string;
  /** 1-based index of the candidate under way, and how many the search plans (undefined for the quick search). */
  readonly candidate: number;
  readonly candidates?: number;
  readonly label: string;
  /** What the candidate is doing: starting, warming up, or the sweep's step. */
  readonly phase: 'starting' | 'warm-up' | 'measuring';
  readonly step?: number;
  readonly steps?: number;
  readonly concurrency?: number;
  readonly timeLeftMs: number;
}

