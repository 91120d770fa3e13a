import { TritonError } from 'tstriton';
import { buildCharset } from '../../../examples/ocr/charset';
import { decodeCtcGreedy, preprocessRecognition } from '../../../examples/ocr/recognition';
import { ctcScores, solidImage } from './synthetic';

describe('preprocessRecognition', () => {
  it('scales crops to height 48, pads them to a common width of at least 320', () => {
    const input = preprocessRecognition([solidImage(96, 24, [255, 0, 0]), solidImage(48, 48, [0, 0, 255])]);
    expect(input.shape).toEqual([2, 3, 48, 320]);
    const plane = 48 * 320;
    const at = (n: number, p: number, y: number, x: number): number => input.data[(n * 3 + p) * plane + y * 320 + x]!;
    // Red crop, 192 wide at height 48: B plane -1, R plane +1, then zero padding.
    expect([at(0, 0, 20, 10), at(0, 1, 20, 10), at(0, 2, 20, 10)]).toEqual([-1, -1, 1]);
    expect(at(0, 2, 47, 191)).toBe(1);
    expect(at(0, 2, 47, 192)).toBe(0);
    // Blue square, 48 wide.
    expect([at(1, 0, 0, 47), at(1, 2, 0, 47), at(1, 0, 0, 48)]).toEqual([1, -1, 0]);
  });

  it('widens the batch to the widest crop', () => {
    expect(preprocessRecognition([solidImage(480, 20, [0, 0, 0]), solidImage(10, 10, [0, 0, 0])]).shape).toEqual([2, 3, 48, 1152]);
  });

  it('squeezes crops wider than maxWidth', () => {
    const input = preprocessRecognition([solidImage(1000, 10, [255, 255, 255])], { maxWidth: 640 });
    expect(input.shape).toEqual([1, 3, 48, 640]);
    expect(input.data[48 * 640 - 1]).toBe(1);
  });

  it('rejects an empty batch', () => {
    expect(() => preprocessRecognition([])).toThrow(TritonError);
  });
});

describe('decodeCtcGreedy', () => {
  const charset = buildCharset('a\nb\n'); // '', a, b, ' '
  const step = (cls: number, p = 0.9): { cls: number; p: number } => ({ cls, p });

  it('merges repeats, drops blanks and keeps a letter repeated across a blank', () => {
    const scores = ctcScores([[step(1, 0.8), step(1, 0.99), step(0), step(1, 0.6), step(2, 0.7), step(2), step(3, 0.5), step(0)]], 4);
    const [result] = decodeCtcGreedy(scores, charset);
    expect(result?.text).toBe('aab ');
    // The first step of each run counts: 0.8, 0.6, 0.7, 0.5.
    expect(result?.confidence).toBeCloseTo(0.65, 6);
  });

  it('reads an all-blank sample as empty text with confidence 0', () => {
    expect(decodeCtcGreedy(ctcScores([[step(0), step(0)]], 4), charset)).toEqual([{ text: '', confidence: 0 }]);
  });

  it('decodes each sample of a batch on its own', () => {
    // The first sample ends with "a" and the second starts with it: no merge across samples.
    const scores = ctcScores([[step(2), step(1)], [step(1), step(0)]], 4);
    expect(decodeCtcGreedy(scores, charset).map((r) => r.text)).toEqual(['ba', 'a']);
  });

  it('rejects a class count the dictionary does not match', () => {
    expect(() => decodeCtcGreedy(ctcScores([[step(1)]], 5), charset)).toThrow(/scores 5 classes, the dictionary gives 4/);
  });

  it('rejects an output that is not [N,T,C]', () => {
    const bad = { dtype: 'FP32' as const, shape: [2, 4], data: new Float32Array(8) };
    expect(() => decodeCtcGreedy(bad, charset)).toThrow(/expected scores \[N,T,C\], got \[2,4\]/);
  });
});
