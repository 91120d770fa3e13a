import { MessageChannel } from 'node:worker_threads';
import { serverStarting, type TritonError } from '../../../lib/base/errors';
import { ModelRepository } from '../../../lib/model/model-repository';
import { RemoteModels } from '../../../lib/server/front-end/core-mirrors';
import { PublishedState, STATE_REVISION } from '../../../lib/server/front-end/core-state';
import { StatePublisher } from '../../../lib/server/front-end/state-publisher';
import { SharedMemoryManager } from '../../../lib/server/shared-memory';
import type { ServerCore } from '../../../lib/server/server-core';
import { thrownBy } from '../../helpers/caught';

// What a front-end thread reads of the core without asking it (core-state.ts, state-publisher.ts): a state the core
// published is read at once by the next read, with no turn of the reader's event loop in between, and a read
// never waits.

/** The part of the core the publisher reads, with readiness and the refusal of inference the test sets. */
function fakeCore(): { core: ServerCore; refusal: () => TritonError | undefined; set(ready: boolean): void; refuse(err: TritonError | undefined): void } {
  let ready = false;
  let refused: TritonError | undefined;
  const core = { isLive: () => true, isReady: () => ready, sharedMemory: new SharedMemoryManager(false), modelStatistics: () => [] } as unknown as ServerCore;
  return { core, refusal: () => refused, set: (r) => (ready = r), refuse: (err) => (refused = err) };
}

describe('the state the core publishes to front-end threads', () => {
  it('is read by the next read after the core publishes it, before any message is delivered', () => {
    const { port1, port2 } = new MessageChannel();
    const counters = new Int32Array(new SharedArrayBuffer(4));
    const repository = new ModelRepository();
    const { core, refusal, set } = fakeCore();
    const publisher = new StatePublisher({ core, repository, refusal }, counters);
    const reader = new PublishedState(port2, counters, publisher.current());
    publisher.add(port1);
    try {
      expect(reader.current).toMatchObject({ live: true, ready: false, models: [] });
      set(true);
      repository.readinessChanged();
      // Synchronously: the reader takes the new state off its port as soon as the revision says there is one.
      expect(Atomics.load(counters, STATE_REVISION)).toBe(reader.current.revision);
      expect(reader.current.ready).toBe(true);
    } finally {
      publisher.close();
      port1.close();
      port2.close();
    }
  });

  it('publishes only changes, and a reader keeps the newest state whatever order it reads in', async () => {
    const { port1, port2 } = new MessageChannel();
    const counters = new Int32Array(new SharedArrayBuffer(4));
    const repository = new ModelRepository();
    const { core, refusal, set } = fakeCore();
    const publisher = new StatePublisher({ core, repository, refusal }, counters);
    const first = publisher.current();
    const reader = new PublishedState(port2, counters, first);
    publisher.add(port1);
    try {
      repository.readinessChanged(); // nothing changed: nothing published
      expect(publisher.current().revision).toBe(first.revision);
      set(true);
      repository.readinessChanged();
      set(false);
      repository.readinessChanged();
      expect(reader.current).toMatchObject({ revision: first.revision + 2, ready: false });
      // The messages the port delivers later are older than what the reader holds: it keeps the newest.
      await new Promise((resolve) => setImmediate(resolve));
      expect(reader.current).toMatchObject({ revision: first.revision + 2, ready: false });
    } finally {
      publisher.close();
      port1.close();
      port2.close();
    }
  });

  it('publishes that the core refuses inference (starting, stopping), and that it no longer does', () => {
    const { port1, port2 } = new MessageChannel();
    const counters = new Int32Array(new SharedArrayBuffer(4));
    const repository = new ModelRepository();
    const { core, refusal, refuse } = fakeCore();
    refuse(serverStarting());
    const publisher = new StatePublisher({ core, repository, refusal }, counters);
    const reader = new PublishedState(port2, counters, publisher.current());
    publisher.add(port1);
    try {
      expect(reader.current.refusing).toBe(true);
      refuse(undefined);
      repository.readinessChanged();
      expect(reader.current.refusing).toBe(false);
    } finally {
      publisher.close();
      port1.close();
      port2.close();
    }
  });

  it('publishes the names of failed loads, which a thread then looks up as the core does: known, with no version', () => {
    const { port1, port2 } = new MessageChannel();
    const counters = new Int32Array(new SharedArrayBuffer(4));
    const repository = new ModelRepository();
    const { core, refusal } = fakeCore();
    const publisher = new StatePublisher({ core, repository, refusal }, counters);
    const reader = new PublishedState(port2, counters, publisher.current());
    publisher.add(port1);
    const models = new RemoteModels(reader);
    const refusals = (name: string, version?: string) =>
      [repository, models].map((lookup) => {
        const err = thrownBy<TritonError>(() => lookup.get(name, version));
        return [err.code, err.message];
      });
    try {
      expect(refusals('broken')).toEqual([0, 1].map(() => ['MODEL_NOT_FOUND', "Request for unknown model: 'broken' is not found"]));
      repository.setFailedLoads(new Map([['broken', ['1']]]));
      expect(reader.current.failedLoads).toEqual([{ name: 'broken', versions: ['1'] }]);
      expect(refusals('broken')).toEqual([0, 1].map(() => ['MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'broken' has no available versions"]));
      expect(refusals('broken', '1')).toEqual([0, 1].map(() => ['MODEL_VERSION_NOT_READY', "Request for unknown model: 'broken' version 1 is not at ready state"]));
      expect(refusals('broken', '2')).toEqual([0, 1].map(() => ['MODEL_VERSION_NOT_FOUND', "Request for unknown model: 'broken' version 2 is not found"]));
      expect(refusals('nope')).toEqual([0, 1].map(() => ['MODEL_NOT_FOUND', "Request for unknown model: 'nope' is not found"]));
      // The same loads again publish nothing; once it loads (or is forgotten), it is unknown again.
      const revision = reader.current.revision;
      repository.setFailedLoads(new Map([['broken', ['1']]]));
      expect(reader.current.revision).toBe(revision);
      repository.setFailedLoads(new Map());
      expect(refusals('broken')).toEqual([0, 1].map(() => ['MODEL_NOT_FOUND', "Request for unknown model: 'broken' is not found"]));
    } finally {
      publisher.close();
      port1.close();
      port2.close();
    }
  });
});
