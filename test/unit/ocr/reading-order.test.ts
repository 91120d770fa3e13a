import type { Box } from '../../../examples/ocr/image';
import { groupIntoLines, sortReadingOrder } from '../../../examples/ocr/reading-order';

describe('groupIntoLines', () => {
  it('puts lines top to bottom and boxes left to right', () => {
    const boxes: Box[] = [
      [300, 105, 400, 140],
      [10, 10, 100, 40],
      [10, 100, 200, 140],
      [150, 12, 260, 38],
    ];
    expect(groupIntoLines(boxes, (b) => b)).toEqual([
      [
        [10, 10, 100, 40],
        [150, 12, 260, 38],
      ],
      [
        [10, 100, 200, 140],
        [300, 105, 400, 140],
      ],
    ]);
  });

  it('keeps a short box on the line of a taller one', () => {
    // A lower-case word sits low on a line whose capitals reach higher.
    const lines = groupIntoLines<Box>([[120, 20, 200, 40], [10, 0, 100, 40]], (b) => b);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.[0]?.[0]).toBe(10);
  });

  it('keeps close lines apart when they overlap by less than half a line', () => {
    const lines = groupIntoLines<Box>([[10, 28, 100, 58], [10, 0, 100, 32]], (b) => b);
    expect(lines.map((l) => l.map((b) => b[1]))).toEqual([[0], [28]]);
  });

  it('groups any item by the box it names', () => {
    const items = [
      { id: 'b', box: [50, 0, 90, 10] as Box },
      { id: 'c', box: [0, 20, 40, 30] as Box },
      { id: 'a', box: [0, 1, 40, 11] as Box },
    ];
    expect(groupIntoLines(items, (i) => i.box).map((l) => l.map((i) => i.id))).toEqual([['a', 'b'], ['c']]);
  });
});

describe('sortReadingOrder', () => {
  it('flattens the lines', () => {
    expect(sortReadingOrder([[0, 50, 10, 60], [20, 0, 30, 10], [0, 0, 10, 10]])).toEqual([
      [0, 0, 10, 10],
      [20, 0, 30, 10],
      [0, 50, 10, 60],
    ]);
  });

  it('returns nothing for nothing', () => {
    expect(sortReadingOrder([])).toEqual([]);
  });
});
