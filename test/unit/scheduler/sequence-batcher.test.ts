import type { Request, Response, SequenceInfo } from '../../../lib/callable/callable';
import { Cancellation, CANCELLATION, type Cancellable } from '../../../lib/base/cancellation';
import { SequenceBatching, type SequenceBatchingInit } from '../../../lib/config/sequence-batching';
import type { Instance } from '../../../lib/instances/instance';
import { SequenceBatcher } from '../../../lib/scheduler/sequence-batcher';
import { TritonError } from '../../../lib/base/errors';

/** An instance whose batches finish when the test says so; it records each batch's rows as `id` or `-` (filler). */
class GatedInstance implements Instance {
  readonly device = { kind: 'cpu' as const, id: 0 };
  healthy = true;
  readonly batches: string[][] = [];
  private gates: (() => void)[] = [];
  constructor(readonly name: string) {}
  async start(): Promise<void> {}
  execute(requests: Request[]): Promise<Response[]> {
    this.batches.push(requests.map((r) => (r.sequence ? r.id : '-')));
    return new Promise((resolve) => this.gates.push(() => resolve(requests.map(() => ({})))));
  }
  release(): void {
    this.gates.shift()?.();
  }
  async close(): Promise<void> {}
}

function req(id: string, sequence: SequenceInfo): Request & Cancellable {
  const cancellation = new Cancellation();
  return {
    inputs: {},
    parameters: {},
    requestedOutputs: [],
    id,
    sequence,
    [CANCELLATION]: cancellation,
    get signal() {
      return cancellation.signal;
    },
  };
}

const turn = () => new Promise((r) => setImmediate(r));

function batcher(instances: Instance[], init: SequenceBatchingInit, maxBatchSize = 2): SequenceBatcher<Response> {
  return new SequenceBatcher<Response>(instances, { modelName: 'm', maxBatchSize, config: new SequenceBatching(init) }, (_r, response) => response);
}

describe('SequenceBatcher', () => {
  it('oldest: a batch takes the sequences whose waiting request is oldest, one request per sequence', async () => {
    const instance = new GatedInstance('m_0');
    const b = batcher([instance], { oldest: { maxCandidateSequences: 4 } });
    const done: Promise<unknown>[] = [];
    // A holds the instance; then B, C, D start and A sends its next request last.
    done.push(b.enqueue(req('a1', { id: 'A', start: true, end: false }), 1, ''));
    await turn();
    for (const [id, seq] of [['b1', 'B'], ['c1', 'C'], ['d1', 'D']] as const) done.push(b.enqueue(req(id, { id: seq, start: true, end: false }), 1, ''));
    done.push(b.enqueue(req('a2', { id: 'A', start: false, end: true }), 1, ''));
    done.push(b.enqueue(req('b2', { id: 'B', start: false, end: true }), 1, ''));
    await turn();
    expect(instance.batches).toEqual([['a1']]);
    instance.release();
    await turn();
    // The two oldest waiting heads: b1 and c1 (b2 waits behind b1 in its own sequence).
    expect(instance.batches[1]).toEqual(['b1', 'c1']);
    instance.release();
    await turn();
    expect(instance.batches[2]).toEqual(['d1', 'a2']);
    instance.release();
    await turn();
    expect(instance.batches[3]).toEqual(['b2']);
    instance.release();
    await Promise.all(done);
    expect(b.liveSequences).toBe(2); // C and D never ended
  });

  it('direct: a sequence keeps its slot; a slot without a ready request is a filler row', async () => {
    const instance = new GatedInstance('m_0');
    const b = batcher([instance], { direct: {} }, 3);
    const done: Promise<unknown>[] = [];
    for (const id of ['A', 'B', 'C']) done.push(b.enqueue(req(`${id}1`, { id, start: true, end: false }), 1, ''));
    await turn();
    expect(instance.batches).toEqual([['A1', 'B1', 'C1']]);
    instance.release();
    await turn();
    done.push(b.enqueue(req('C2', { id: 'C', start: false, end: true }), 1, ''));
    await turn();
    // C is in slot 2: slots 0 and 1 (A and B, nothing waiting) are fillers.
    expect(instance.batches[1]).toEqual(['-', '-', 'C2']);
    instance.release();
    await Promise.all(done);
  });

  it('backlogs sequences beyond the slots and gives them the slot an ending sequence frees', async () => {
    const instance = new GatedInstance('m_0');
    const b = batcher([instance], { oldest: { maxCandidateSequences: 1 } }, 1);
    const a = b.enqueue(req('a1', { id: 'A', start: true, end: true }), 1, '');
    const bb = b.enqueue(req('b1', { id: 'B', start: true, end: true }), 1, '');
    await turn();
    expect(instance.batches).toEqual([['a1']]);
    expect(b.liveSequences).toBe(2);
    instance.release();
    await a;
    await turn();
    expect(instance.batches[1]).toEqual(['b1']);
    instance.release();
    await bb;
    expect(b.liveSequences).toBe(0);
  });

  describe('idle sequences (fake timers)', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('holds no timer for a sequence waiting for its slot: a backlog of 1,000 keeps as many timers as one of 10', async () => {
      const instance = new GatedInstance('m_0');
      const b = batcher([instance], { oldest: { maxCandidateSequences: 1 }, maxSequenceIdleMicroseconds: 50_000 }, 1);
      const starts: Promise<unknown>[] = [];
      const startMore = async (n: number) => {
        for (let i = 0; i < n; i++) starts.push(b.enqueue(req(`s${starts.length}`, { id: starts.length + 1, start: true, end: false }), 1, '').catch(() => undefined));
        await jest.advanceTimersByTimeAsync(0);
      };
      // The first START runs (held by the instance); the others wait in the backlog.
      await startMore(10);
      expect(instance.batches).toEqual([['s0']]);
      const withTen = jest.getTimerCount();
      await startMore(990);
      expect(b.liveSequences).toBe(1000);
      expect(jest.getTimerCount()).toBe(withTen);
      // A sequence that has run still idles out, and its slot goes to the oldest in the backlog.
      instance.release();
      await jest.advanceTimersByTimeAsync(49);
      expect(b.liveSequences).toBe(1000);
      await jest.advanceTimersByTimeAsync(1);
      expect(b.liveSequences).toBe(999);
      // The dispatch that runs s1, at the end of the turn that freed the slot.
      await jest.advanceTimersToNextTimerAsync();
      expect(instance.batches[1]).toEqual(['s1']);
      b.rejectAll(new TritonError('UNAVAILABLE', 'test over'));
      instance.release();
      await Promise.all(starts);
    });
  });

  describe('with maxQueueDelayMicroseconds (fake timers)', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('oldest: a partial batch waits up to the delay for the preferred size, and goes at once when it is reached', async () => {
      const instance = new GatedInstance('m_0');
      const b = batcher([instance], { oldest: { maxCandidateSequences: 4, preferredBatchSize: [3], maxQueueDelayMicroseconds: 50_000 } }, 4);
      const first = [b.enqueue(req('a1', { id: 'A', start: true, end: true }), 1, ''), b.enqueue(req('b1', { id: 'B', start: true, end: true }), 1, '')];
      await jest.advanceTimersByTimeAsync(0);
      expect(instance.batches).toEqual([]);
      await jest.advanceTimersByTimeAsync(49);
      expect(instance.batches).toEqual([]);
      await jest.advanceTimersByTimeAsync(2);
      expect(instance.batches).toEqual([['a1', 'b1']]);
      instance.release();
      await Promise.all(first);
      const second = ['c', 'd', 'e'].map((id) => b.enqueue(req(`${id}1`, { id, start: true, end: true }), 1, ''));
      await jest.advanceTimersByTimeAsync(0);
      expect(instance.batches[1]).toEqual(['c1', 'd1', 'e1']);
      instance.release();
      await Promise.all(second);
    });

    it('direct: waits up to the delay for every live sequence to have a request, then runs what is ready', async () => {
      const instance = new GatedInstance('m_0');
      const b = batcher([instance], { direct: { maxQueueDelayMicroseconds: 50_000 } }, 2);
      const starts = ['A', 'B'].map((id) => b.enqueue(req(`${id}1`, { id, start: true, end: false }), 1, ''));
      await jest.advanceTimersByTimeAsync(0);
      expect(instance.batches).toEqual([['A1', 'B1']]);
      instance.release();
      await Promise.all(starts);
      const a2 = b.enqueue(req('A2', { id: 'A', start: false, end: true }), 1, '');
      await jest.advanceTimersByTimeAsync(40);
      expect(instance.batches.length).toBe(1);
      await jest.advanceTimersByTimeAsync(20);
      expect(instance.batches[1]).toEqual(['A2']);
      instance.release();
      await a2;
    });
  });
});
