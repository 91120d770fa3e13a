import type { Instance } from '../instances/instance';

/** A request's result together with where its time went. */
export interface Scheduled<T> {
  readonly value: T;
  readonly queueNs: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
  /** Rows of the execution the request ran in. */
  readonly batchRows: number;
}

/** One execution, for statistics. */
export interface ExecutionRecord {
  readonly rows: number;
  readonly requests: number;
  readonly computeInputNs: number;
  readonly computeInferNs: number;
  readonly computeOutputNs: number;
  readonly instance: Instance;
  readonly failed: boolean;
}
