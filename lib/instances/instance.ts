import { TritonError } from '../base/errors';
import type { Request, Response, StreamItem } from '../callable/callable';
import type { Device, InstanceContext, InstanceReport } from '../callable/instance-context';

export type { Device, DeviceKind, InstanceContext, InstanceReport } from '../callable/instance-context';

/** Executes batches of requests. One batch is one unit of work. */
export interface Instance {
  /** Instance name, `<model>_<index>`. */
  readonly name: string;
  readonly device: Device;
  /** False while the instance cannot take work (starting, or restarting after a crash). */
  readonly healthy: boolean;
  /**
   * True while an unhealthy instance is coming back by itself (a worker restarting at once after a crash):
   * requests keep queuing for it and its model stays ready. False or absent otherwise, and once it gives up
   * (backing off after repeated failures, failed for good, closed).
   */
  readonly recovering?: boolean;
  /** What the instance said of itself when it last started (an ONNX instance: its execution provider). */
  readonly report?: InstanceReport;
  /** Executions it may run at once; 1 (one batch at a time) when absent. */
  readonly maxConcurrency?: number;
  /**
   * Batches it accepts beyond `maxConcurrency`, to start the moment a running one ends (0 when absent). The
   * scheduler hands them over only when waiting could not make them larger (batching off, or a full batch).
   * A batch that never started because the instance failed is rejected with `BatchNotStarted`.
   */
  readonly prefetch?: number;
  /** Prepares the instance (spawns its worker, calls the callable's `initialize`). */
  start(context: InstanceContext): Promise<void>;
  /** Runs one batch; resolves with one response per request, in order. */
  execute(requests: Request[]): Promise<Response[]>;
  /** Runs one batch of a decoupled model: any number of responses per request (in-process and worker instances). */
  stream?(requests: Request[]): AsyncIterable<StreamItem>;
  /** Releases the instance's resources (calls the callable's `finalize`). */
  close(): Promise<void>;
  /**
   * Subscribes to health changes (a worker crashing, restarting, failing to restart); returns the unsubscribe
   * function. Instances whose health never changes after start may omit it.
   */
  onHealthChange?(listener: (event: HealthEvent) => void): () => void;
  /**
   * Present on instances that keep the implicit state of their sequences themselves (worker instances, in their
   * thread): the sequence batcher then marks each request with its state's id (see sequence-state-mark.ts) and
   * calls this when sequences end, to free their states.
   */
  releaseSequenceStates?(ids: readonly number[]): void;
}

/** True while `instance` takes work, or is coming back by itself to take it (see `Instance.recovering`). */
export function inService(instance: Instance): boolean {
  return instance.healthy || instance.recovering === true;
}

/** A change of an instance's health, or a failed attempt to restore it. */
export interface HealthEvent {
  readonly instance: string;
  readonly healthy: boolean;
  /** Why the instance is unhealthy: the crash or the failed restart. */
  readonly cause?: Error;
  /** When the next restart attempt starts, if one is scheduled. */
  readonly retryInMs?: number;
}

/** Parses `cpu`, `gpu`, `gpu:1`, `cuda:1` into a Device. */
export function parseDevice(spec: string | Device): Device {
  if (typeof spec !== 'string') return spec;
  const m = /^(cpu|gpu|cuda)(?::(\d+))?$/.exec(spec.trim().toLowerCase());
  if (!m) throw new TritonError('INVALID_CONFIG', `invalid device "${spec}": expected cpu, gpu, gpu:N or cuda:N`);
  return { kind: m[1] === 'cpu' ? 'cpu' : 'gpu', id: m[2] === undefined ? 0 : Number(m[2]) };
}
