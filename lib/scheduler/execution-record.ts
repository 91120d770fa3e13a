import type { Request, Response } from '../callable/callable';
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

/** Runs a batch on an instance; an instance that throws instead of rejecting fails the batch in the same way. */
export function executeOn(instance: Instance, requests: Request[]): Promise<Response[]> {
  try {
    return instance.execute(requests);
  } catch (err) {
    return Promise.reject(err);
  }
}
