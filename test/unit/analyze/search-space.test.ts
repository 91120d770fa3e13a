import type { Candidate } from '../../../lib/analyze/candidate';
import { candidateKey } from '../../../lib/analyze/candidate';
import { coarse, gridCandidates, gridSize, neighbours, quickSearch, searchSpace, type SearchBounds } from '../../../lib/analyze/search-space';

const BOUNDS: SearchBounds = {
  minModelBatchSize: 1,
  maxModelBatchSize: 64,
  queueDelaysUs: [500, 0, 100],
  minInstanceCount: 1,
  maxInstanceCount: 3,
  kinds: ['cpu'],
  httpThreadCounts: [2, 1],
};
const BASE: Candidate = { maxBatchSize: 8, maxQueueDelayMicroseconds: 0, instanceCount: 1, kind: 'cpu', httpThreadCount: 1 };

describe('searchSpace', () => {
  it('takes the powers of two between the batch-size bounds, every instance count, and the lists sorted', () => {
    expect(searchSpace(BOUNDS, BASE)).toEqual({
      maxBatchSize: [1, 2, 4, 8, 16, 32, 64],
      maxQueueDelayMicroseconds: [0, 100, 500],
      instanceCount: [1, 2, 3],
      kind: ['cpu'],
      httpThreadCount: [1, 2],
    });
  });

  it('keeps max_batch_size 0 and the queue delay of a model that does not batch', () => {
    const space = searchSpace(BOUNDS, { ...BASE, maxBatchSize: 0, maxQueueDelayMicroseconds: 0 });
    expect(space.maxBatchSize).toEqual([0]);
    expect(space.maxQueueDelayMicroseconds).toEqual([0]);
  });

  it.each([
    [{ minModelBatchSize: 64, maxModelBatchSize: 8 }, 'no power of two lies between --min-model-batch-size 64 and --max-model-batch-size 8'],
    [{ minModelBatchSize: 5, maxModelBatchSize: 7 }, 'no power of two lies between --min-model-batch-size 5 and --max-model-batch-size 7'],
    [{ minInstanceCount: 3, maxInstanceCount: 2 }, '--min-instance-count 3 is above --max-instance-count 2'],
    [{ kinds: [] }, '--kind lists no instance kind'],
  ])('refuses bounds that leave no candidate: %j', (bounds, message) => {
    expect(() => searchSpace({ ...BOUNDS, ...bounds }, BASE)).toThrow(`no candidate to measure: ${message}`);
  });

  it('walks the whole grid once in brute mode', () => {
    const space = searchSpace(BOUNDS, BASE);
    const all = [...gridCandidates(space)];
    expect(all).toHaveLength(gridSize(space));
    expect(gridSize(space)).toBe(7 * 3 * 3 * 1 * 2);
    expect(new Set(all.map(candidateKey)).size).toBe(all.length);
  });
});

describe('coarse and neighbours', () => {
  it('takes every other value and the last', () => {
    expect(coarse([1, 2, 4, 8, 16, 32, 64])).toEqual([1, 4, 16, 64]);
    expect(coarse([1, 2, 4, 8])).toEqual([1, 4, 8]);
    expect(coarse([1])).toEqual([1]);
  });

  it('gives the values on either side, or the nearest entry and its sides for a value not in the list', () => {
    expect(neighbours([1, 2, 4, 8], 4)).toEqual([2, 8]);
    expect(neighbours([1, 2, 4, 8], 1)).toEqual([2]);
    expect(neighbours([1, 2, 4, 8], 6)).toEqual([8, 4]);
    expect(neighbours(['cpu', 'gpu:0'], 'cpu')).toEqual(['gpu:0']);
  });
});

describe('quickSearch', () => {
  /** A made-up score with its best at max_batch_size 16, 2 instances, delay 100, 2 threads. */
  const score = (c: Candidate) =>
    -Math.abs(Math.log2(c.maxBatchSize) - 4) - Math.abs(c.instanceCount - 2) - Math.abs(c.maxQueueDelayMicroseconds - 100) / 100 - Math.abs(c.httpThreadCount - 2);

  it('finds the best of a smooth space measuring far fewer candidates than the grid, each once', async () => {
    const space = searchSpace(BOUNDS, BASE);
    const seen: string[] = [];
    await quickSearch(space, BASE, score(BASE), async (c) => {
      seen.push(candidateKey(c));
      return score(c);
    }, (a, b) => a - b);
    expect(seen).toContain(candidateKey({ maxBatchSize: 16, maxQueueDelayMicroseconds: 100, instanceCount: 2, kind: 'cpu', httpThreadCount: 2 }));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeLessThan(gridSize(space) / 3);
  });

  it('stops when evaluate says so', async () => {
    const space = searchSpace(BOUNDS, BASE);
    let calls = 0;
    await quickSearch(space, BASE, 0, async () => (++calls < 3 ? 0 : undefined), (a, b) => a - b);
    expect(calls).toBe(3);
  });
});
