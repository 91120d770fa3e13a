import { TritonError } from 'tstriton';
import { DETECTION_NORM, detectionInputSize, postprocessDetection, preprocessDetection } from '../../../examples/ocr/detection';
import { probabilityMap, solidImage } from './synthetic';

describe('detectionInputSize', () => {
  it.each([
    [640, 160, 640, 160],
    [1920, 1080, 960, 544], // halved to 960x540, then 540 rounds to 17 * 32
    [100, 10, 96, 32], // short sides never go below 32
    [50, 50, 64, 64], // rounds to the nearest multiple, up as well as down
    [3000, 200, 960, 64],
  ])('%ix%i → %ix%i', (w, h, ew, eh) => {
    expect(detectionInputSize(w, h)).toEqual({ width: ew, height: eh });
  });

  it('honours another side limit', () => {
    expect(detectionInputSize(1920, 1080, 640)).toEqual({ width: 640, height: 352 });
  });
});

describe('preprocessDetection', () => {
  it('writes NCHW planes in B, G, R order with ImageNet statistics', () => {
    const input = preprocessDetection(solidImage(64, 32, [255, 128, 0]));
    expect(input.tensor.shape).toEqual([1, 3, 32, 64]);
    expect([input.sourceWidth, input.sourceHeight]).toEqual([64, 32]);
    const plane = 32 * 64;
    const at = (p: number): number => input.tensor.data[p * plane + 5 * 64 + 7]!;
    expect(at(0)).toBeCloseTo((0 - 0.485) / 0.229, 5); // blue
    expect(at(1)).toBeCloseTo((128 / 255 - 0.456) / 0.224, 5); // green
    expect(at(2)).toBeCloseTo((1 - 0.406) / 0.225, 5); // red
    expect(DETECTION_NORM.mean).toEqual([0.485, 0.456, 0.406]);
  });

  it('resizes to the rounded size', () => {
    const input = preprocessDetection(solidImage(1000, 70, [0, 0, 0]));
    expect(input.tensor.shape).toEqual([1, 3, 64, 960]);
    expect(input.tensor.data.length).toBe(3 * 64 * 960);
  });
});

describe('postprocessDetection', () => {
  it('finds no box in a map below the threshold', () => {
    expect(postprocessDetection(probabilityMap(64, 32, [], 0.29), { width: 64, height: 32 })).toEqual([]);
  });

  it('expands a region by area * ratio / perimeter and scales it to the source', () => {
    // 40 x 8 region: d = 320 * 1.5 / 96 = 5 map pixels; the source is twice the map's size.
    const map = probabilityMap(64, 32, [{ rect: [10, 8, 50, 16], p: 0.9 }]);
    expect(postprocessDetection(map, { width: 128, height: 64 })).toEqual([[10, 6, 110, 42]]);
    expect(postprocessDetection(map, { width: 128, height: 64 }, { unclipRatio: 0 })).toEqual([[20, 16, 100, 32]]);
  });

  it('clips expanded boxes to the image', () => {
    const map = probabilityMap(64, 32, [{ rect: [0, 0, 30, 6], p: 0.9 }]);
    const [box] = postprocessDetection(map, { width: 64, height: 32 });
    expect(box?.[0]).toBe(0);
    expect(box?.[1]).toBe(0);
  });

  it('drops regions scoring under boxThreshold and regions thinner than minSize', () => {
    const map = probabilityMap(64, 32, [
      { rect: [2, 2, 30, 10], p: 0.5 },
      { rect: [40, 2, 60, 4], p: 0.95 },
      { rect: [2, 20, 30, 28], p: 0.7 },
    ]);
    expect(postprocessDetection(map, { width: 64, height: 32 }, { unclipRatio: 0 })).toEqual([[2, 20, 30, 28]]);
    expect(postprocessDetection(map, { width: 64, height: 32 }, { unclipRatio: 0, boxThreshold: 0.4 })).toEqual([
      [2, 2, 30, 10],
      [2, 20, 30, 28],
    ]);
  });

  it('joins regions touching at a corner (8-connectivity)', () => {
    const map = probabilityMap(64, 32, [
      { rect: [4, 4, 14, 10], p: 0.9 },
      { rect: [14, 10, 24, 16], p: 0.9 },
    ]);
    expect(postprocessDetection(map, { width: 64, height: 32 }, { unclipRatio: 0 })).toEqual([[4, 4, 24, 16]]);
  });

  it('returns boxes in reading order, whatever the scan finds first', () => {
    // The right-hand word starts one row higher, so a row-major scan meets it first.
    const map = probabilityMap(128, 64, [
      { rect: [70, 5, 120, 15], p: 0.9 },
      { rect: [10, 6, 60, 16], p: 0.9 },
      { rect: [10, 40, 60, 50], p: 0.9 },
    ]);
    expect(postprocessDetection(map, { width: 128, height: 64 }, { unclipRatio: 0 })).toEqual([
      [10, 6, 60, 16],
      [70, 5, 120, 15],
      [10, 40, 60, 50],
    ]);
  });

  it('stops after maxCandidates regions', () => {
    const regions = [0, 1, 2, 3].map((i) => ({ rect: [4, 2 + i * 7, 40, 6 + i * 7] as const, p: 0.9 }));
    expect(postprocessDetection(probabilityMap(64, 32, regions), { width: 64, height: 32 }, { maxCandidates: 2 })).toHaveLength(2);
  });

  it('rejects an output that is not [1,1,H,W]', () => {
    const bad = { dtype: 'FP32' as const, shape: [1, 2, 4, 4], data: new Float32Array(32) };
    expect(() => postprocessDetection(bad, { width: 4, height: 4 })).toThrow(TritonError);
    expect(() => postprocessDetection(bad, { width: 4, height: 4 })).toThrow(/expected a probability map \[1,1,H,W\], got \[1,2,4,4\]/);
  });
});
