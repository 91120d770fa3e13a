import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { ModelConfigJson } from '../../config/triton-model-config';
import type { FailedLoad } from '../../model/model-repository';
import type { ModelShape, ModelState } from '../../model/model-view';
import type { ModelMetadata } from '../../protocol/model-metadata';
import type { RegisteredRegion } from '../shared-memory';

/** One model version as the core publishes it to the front-end threads. */
export interface PublishedModel {
  readonly shape: ModelShape;
  /** Its state: the threads pick the version a request gets from it as the core does (`servingVersion`). */
  readonly state: ModelState;
  readonly ready: boolean;
  readonly configJson: ModelConfigJson;
  /** Its metadata, listing the ready versions of its name. */
  readonly metadata: ModelMetadata;
  /** The chat template string it was bound with; unset when its template is a function, applied by the core only. */
  readonly chatTemplate: string | undefined;
}

/**
 * What a front-end thread reads of the core without asking it: liveness, readiness, the models and the
 * shared-memory regions. The core publishes a new one on every change, before it answers whatever caused it.
 */
export interface CoreState {
  /** Counts the states the core published; a thread whose copy is older takes the newer one from its port. */
  readonly revision: number;
  readonly live: boolean;
  readonly ready: boolean;
  /**
   * True while the core takes no inference (starting, stopping). Its entry refuses such a request before it looks
   * the model up, so a thread then hands the request on whatever its model's state (a stopping server's models are
   * unavailable by then): the client meets the server's refusal, not a model with no ready version.
   */
  readonly refusing: boolean;
  /** Every bound model version, in binding order. */
  readonly models: readonly PublishedModel[];
  /**
   * The models whose versions failed to build and that serve nothing (`ModelRepository.setFailedLoads`): known
   * names, looked up as the core looks them up ("has no available versions", not "is not found").
   */
  readonly failedLoads: readonly FailedLoad[];
  /** The system shared-memory regions clients registered, each with the count of its registration. */
  readonly regions: readonly RegisteredRegion[];
}

/**
 * Statistics of every ready model in Triton's `model_stats` form, as the core last published them: what a
 * front-end thread answers when the core is too busy to answer at once.
 */
export interface StatisticsSnapshot {
  readonly t: 'statistics';
  readonly modelStats: readonly Record<string, unknown>[];
}

/** What the core posts on a thread's state port. */
export type StateMessage = CoreState | StatisticsSnapshot;

/** The slot of the shared counters (`Int32Array`) the core bumps after posting each state: its revision. */
export const STATE_REVISION = 0;

/**
 * A front-end thread's copy of what the core publishes. The core posts each state on this thread's port, then
 * bumps the shared revision; a read that finds the revision ahead of its copy takes the newer state off the port
 * at once (`receiveMessageOnPort`), so a thread never answers from a state older than one the core had published
 * before the request arrived, and never waits for the core either.
 */
export class PublishedState {
  private state: CoreState;
  private snapshot: StatisticsSnapshot | undefined;

  constructor(
    private readonly port: MessagePort,
    private readonly counters: Int32Array,
    first: CoreState,
  ) {
    this.state = first;
    // Taken as they come too, so that the port never holds more than the messages of one turn.
    port.on('message', (message: StateMessage) => this.keep(message));
    port.unref();
  }

  /** The latest state the core published. */
  get current(): CoreState {
    if (Atomics.load(this.counters, STATE_REVISION) !== this.state.revision) this.takeQueued();
    return this.state;
  }

  /** The statistics the core last published, with whatever it published since taken first. */
  statistics(): StatisticsSnapshot | undefined {
    this.takeQueued();
    return this.snapshot;
  }

  private takeQueued(): void {
    for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) this.keep(m.message as StateMessage);
  }

  private keep(message: StateMessage): void {
    if ('t' in message) this.snapshot = message;
    else if (message.revision > this.state.revision) this.state = message;
  }
}
