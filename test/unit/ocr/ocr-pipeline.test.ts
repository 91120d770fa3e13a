import { TritonError, type Tensor } from 'tstriton';
import { buildCharset } from '../../../examples/ocr/charset';
import { runOcr, type OcrModels } from '../../../examples/ocr/ocr-pipeline';
import { ctcScores, fillRect, probabilityMap, solidImage, type Rect } from './synthetic';

// A 128x64 page (the detection input is the same size, so map and image pixels coincide) with three
// coloured patches standing for words: two on the first line, one below. The fake recogniser reads a
// crop's colour at its centre and answers R, G or B.
const charset = buildCharset('R\nG\nB\n');
const PATCHES: readonly { rect: Rect; rgb: [number, number, number]; cls: number }[] = [
  { rect: [70, 8, 110, 20], rgb: [0, 200, 0], cls: 2 },
  { rect: [8, 40, 50, 52], rgb: [0, 0, 200], cls: 3 },
  { rect: [8, 9, 40, 21], rgb: [200, 0, 0], cls: 1 },
];

function page() {
  const image = solidImage(128, 64, [255, 255, 255]);
  for (const p of PATCHES) fillRect(image, p.rect, p.rgb);
  return image;
}

/** Fake models; `confidence` maps a letter to the probability the recogniser gives it. */
function fakeModels(confidence: Record<string, number> = {}) {
  const calls = { detect: [] as number[][], recognize: [] as number[][] };
  const models: OcrModels = {
    detect: async (input) => {
      calls.detect.push([...input.shape]);
      return probabilityMap(128, 64, PATCHES.map((p) => ({ rect: p.rect, p: 0.9 })));
    },
    recognize: async (input) => {
      calls.recognize.push([...input.shape]);
      return ctcScores(samples(input).map((cls) => [{ cls, p: confidence[charset[cls]!] ?? 0.9 }]), charset.length);
    },
  };
  return { models, calls };
}

/** The class of each sample's colour, sampled at the centre of its unpadded part. */
function samples(input: Tensor<'FP32'>): number[] {
  const [n, , h, w] = input.shape as [number, number, number, number];
  const plane = h * w;
  return Array.from({ length: n }, (_, i) => {
    const value = (p: number, x: number): number => input.data[(i * 3 + p) * plane + (h >> 1) * w + x]!;
    let width = 0;
    while (width < w && [0, 1, 2].some((p) => value(p, width) !== 0)) width++;
    const [b, g, r] = [0, 1, 2].map((p) => value(p, width >> 1));
    return r! > 0 ? 1 : g! > 0 ? 2 : b! > 0 ? 3 : 0;
  });
}

describe('runOcr', () => {
  it('reads every region and returns them by line, left to right', async () => {
    const { models, calls } = fakeModels();
    const result = await runOcr(page(), models, charset);
    expect(calls.detect).toEqual([[1, 3, 64, 128]]);
    expect(result.lines).toEqual(['R G', 'B']);
    expect(result.regions.map((r) => r.text)).toEqual(['R', 'G', 'B']);
    expect(result.regions[0]?.box[0]).toBeLessThan(8);
    expect(result.regions[0]?.confidence).toBeCloseTo(0.9, 6);
  });

  it('splits recognition into batches of recognitionBatchSize', async () => {
    const { models, calls } = fakeModels();
    const result = await runOcr(page(), models, charset, { recognitionBatchSize: 2 });
    expect(calls.recognize.map((shape) => shape[0])).toEqual([2, 1]);
    expect(result.lines).toEqual(['R G', 'B']);
  });

  it('drops regions read with a confidence under dropScore', async () => {
    const { models } = fakeModels({ G: 0.4 });
    expect((await runOcr(page(), models, charset)).lines).toEqual(['R', 'B']);
    expect((await runOcr(page(), models, charset, { dropScore: 0.3 })).lines).toEqual(['R G', 'B']);
  });

  it('makes no recognition call when nothing is detected', async () => {
    const { models, calls } = fakeModels();
    const result = await runOcr(page(), { ...models, detect: async () => probabilityMap(128, 64, []) }, charset);
    expect(result).toEqual({ regions: [], lines: [] });
    expect(calls.recognize).toEqual([]);
  });

  it('stops with CANCELLED once the signal is aborted', async () => {
    const { models, calls } = fakeModels();
    const controller = new AbortController();
    const detect: OcrModels['detect'] = async (input, options) => {
      const out = await models.detect(input, options);
      controller.abort(new Error('client left'));
      return out;
    };
    const run = runOcr(page(), { ...models, detect }, charset, { signal: controller.signal });
    await expect(run).rejects.toThrow(TritonError);
    await expect(run).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(calls.recognize).toEqual([]);
  });
});
