import { SequenceLanes } from '../../../lib/perf/sequence-lanes';

describe('SequenceLanes: an open loop over sequences, one request in flight each', () => {
  it('gives each due request the sequence idle longest, and none while every sequence is busy', () => {
    const lanes = new SequenceLanes(3);
    expect([lanes.due(), lanes.due(), lanes.due()]).toEqual([0, 1, 2]);
    expect(lanes.due()).toBeUndefined();
    // The fourth request was held: it goes out on lane 1, the first to answer, which stays busy.
    expect(lanes.answered(1)).toBe(true);
    expect(lanes.answered(0)).toBe(false);
    expect(lanes.answered(2)).toBe(false);
    expect([lanes.due(), lanes.due(), lanes.due()]).toEqual([0, 2, undefined]);
    expect(lanes.answered(1)).toBe(true);
    expect(lanes.answered(1)).toBe(false);
    expect(lanes.due()).toBe(1);
  });

  it('sends each held request, in turn, on the next sequence that answers, and counts them once', () => {
    const lanes = new SequenceLanes(2);
    lanes.due();
    lanes.due();
    expect([lanes.due(), lanes.due(), lanes.due()]).toEqual([undefined, undefined, undefined]);
    expect([lanes.answered(0), lanes.answered(1), lanes.answered(0), lanes.answered(1)]).toEqual([true, true, true, false]);
    expect(lanes.takeDelayed()).toBe(3);
    expect(lanes.takeDelayed()).toBe(0);
    expect(lanes.due()).toBe(1);
  });
});
