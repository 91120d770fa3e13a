import type { MessagePort } from 'node:worker_threads';
import { chatTemplateOf } from '../../model/chat-template';
import type { ModelRepository } from '../../model/model-repository';
import { shapeOf } from '../../model/model-view';
import type { TritonError } from '../../base/errors';
import type { ServerCore } from '../server-core';
import { STATE_REVISION, type CoreState, type PublishedModel, type StateMessage, type StatisticsSnapshot } from './core-state';

/** How often the core publishes the statistics while they change (a front-end thread's fallback, remote-core.ts). */
const STATISTICS_INTERVAL_MS = 250;

/** What the publisher reads: the core (liveness, readiness, statistics, regions) and its models. */
export interface PublisherHost {
  readonly core: ServerCore;
  readonly repository: ModelRepository;
  /** Why the core takes no inference now (starting, stopping), as its entry refuses; undefined while it runs. */
  readonly refusal: () => TritonError | undefined;
}

/**
 * The core thread's side of what front-end threads read without asking (core-state.ts): on every change of
 * liveness, readiness, the models (the names of failed loads among them) or the shared-memory regions it posts
 * the new state to each thread's port, then bumps the shared revision; a thread that reads after the bump takes
 * the new state off its port. It is called where the change happens, before whatever caused it is answered, so a
 * client that saw a load or an unload answered never reads the state from before it on any thread.
 */
export class StatePublisher {
  private readonly ports = new Set<MessagePort>();
  private revision = 0;
  /** What the last published state said, to publish only changes. */
  private said = '';
  private latest: CoreState | undefined;
  private statistics: NodeJS.Timeout | undefined;
  private counted = -1;

  constructor(
    private readonly host: PublisherHost,
    private readonly counters: Int32Array,
  ) {
    host.repository.onChange(() => this.publish(true));
    host.repository.onReadinessChange(() => this.publish());
  }

  /** The state as it is now, published first if it changed: what a new thread starts with. */
  current(): CoreState {
    this.publish();
    return this.latest as CoreState;
  }

  /** Publishes to `port` from now on (a thread's), and the statistics while any thread is there. */
  add(port: MessagePort): void {
    this.ports.add(port);
    this.statistics ??= setInterval(() => this.publishStatistics(), STATISTICS_INTERVAL_MS).unref();
  }

  remove(port: MessagePort): void {
    this.ports.delete(port);
    if (this.ports.size > 0 || this.statistics === undefined) return;
    clearInterval(this.statistics);
    this.statistics = undefined;
  }

  /**
   * Publishes the state if it changed since the last one (or, with `always`, in any case: the models themselves
   * changed, which the summary compared does not show).
   */
  publish(always = false): void {
    const { core, repository } = this.host;
    const models = repository.all();
    const live = core.isLive();
    const ready = core.isReady();
    const refusing = this.host.refusal() !== undefined;
    const regions = core.sharedMemory.registered();
    const failedLoads = repository.failedLoads();
    const said = `${live} ${ready} ${refusing} ${models.map((m) => `${m.name}/${m.version}/${m.state}/${m.ready}`).join(',')} ${JSON.stringify(failedLoads)} ${JSON.stringify(regions)}`;
    if (!always && said === this.said && this.latest !== undefined) return;
    this.said = said;
    const state: CoreState = {
      revision: ++this.revision,
      live,
      ready,
      refusing,
      models: models.map((m): PublishedModel => ({
        shape: shapeOf(m),
        state: m.state,
        ready: m.ready,
        configJson: m.configJson,
        metadata: repository.describe(m),
        chatTemplate: chatTemplateOf(m).text,
      })),
      failedLoads,
      regions,
    };
    this.latest = state;
    this.post(state);
    // After the posts: a thread that sees this revision finds the state on its port.
    Atomics.store(this.counters, STATE_REVISION, state.revision);
  }

  /** Stops publishing statistics. */
  close(): void {
    if (this.statistics !== undefined) clearInterval(this.statistics);
    this.statistics = undefined;
  }

  /**
   * Publishes every ready model's statistics when requests have ended since the last time; `now` publishes them
   * whatever has changed (a thread asked the core for statistics: every thread's fallback is then as fresh as
   * that answer).
   */
  publishStatistics(now = false): void {
    const models = this.host.repository.all();
    let ended = 0;
    for (const m of models) ended += m.statistics.success.count + m.statistics.fail.count + m.statistics.executionCount;
    if (ended === this.counted && !now) return;
    let modelStats: Record<string, unknown>[];
    try {
      modelStats = this.host.core.modelStatistics() as Record<string, unknown>[];
    } catch {
      return; // a model between states: the next turn publishes
    }
    this.counted = ended;
    this.post({ t: 'statistics', modelStats } satisfies StatisticsSnapshot);
  }

  private post(message: StateMessage): void {
    for (const port of this.ports) port.postMessage(message);
  }
}
