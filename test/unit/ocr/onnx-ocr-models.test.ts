/** @jest-environment ./test/unit/ocr/onnxruntime-environment.ts */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadCharset } from '../../../examples/ocr/charset';
import { decodeImage, type RgbImage } from '../../../examples/ocr/image';
import { ocrModelFiles } from '../../../examples/ocr/ocr-model-files';
import { runOcr } from '../../../examples/ocr/ocr-pipeline';
import { loadOnnxOcrModels, type OnnxOcrModels } from '../../../examples/ocr/onnx-ocr-models';
import { preprocessRecognition } from '../../../examples/ocr/recognition';
import { solidImage } from './synthetic';

// End to end with the real PP-OCRv4 models. The texts are the ones make_fixtures.py prints.
const FIXTURES = path.join(__dirname, '../../fixtures/ocr');
const read = (name: string): RgbImage => decodeImage(fs.readFileSync(path.join(FIXTURES, name)));

describe('PP-OCRv4 through onnxruntime-node', () => {
  const files = ocrModelFiles();
  const charset = loadCharset(files.dictionary);
  let models: OnnxOcrModels;

  beforeAll(async () => {
    // One thread: on a 2-core machine shared with other work, ORT's spinning pool threads only contend.
    models = await loadOnnxOcrModels(files, { intraOpNumThreads: 1 });
  });

  afterAll(async () => {
    await models.release();
  });

  it('scores one class per dictionary entry plus blank and space, one step per 8 columns', async () => {
    const out = await models.recognize(preprocessRecognition([solidImage(64, 32, [255, 255, 255])]), {});
    expect(out.shape).toEqual([1, 40, charset.length]);
    expect(charset.length).toBe(6625);
  });

  it('reads one line of capitals and digits', async () => {
    const result = await runOcr(read('hello-world.png'), models, charset);
    expect(result.lines).toEqual(['HELLO WORLD 2026']);
    expect(result.regions).toHaveLength(1);
    expect(result.regions[0]?.confidence).toBeGreaterThan(0.9);
    // The text was drawn from (40, 50) at 48 px; the box must hold it and not much more.
    const [x0, y0, x1, y1] = result.regions[0]!.box;
    expect(x0).toBeGreaterThan(25);
    expect(x0).toBeLessThanOrEqual(44);
    expect(y0).toBeGreaterThan(40);
    expect(y1).toBeLessThan(115);
    expect(x1).toBeGreaterThan(500);
  });

  it('reads two lines of mixed case from a JPEG, in order', async () => {
    const result = await runOcr(read('two-lines.jpg'), models, charset);
    expect(result.lines).toEqual(['Triton serves OCR', 'second line 42']);
    expect(result.regions[0]!.box[3]).toBeLessThan(result.regions[1]!.box[1]);
  });

  it('finds nothing on a blank page', async () => {
    expect(await runOcr(read('blank.png'), models, charset)).toEqual({ regions: [], lines: [] });
  });

  it('finds nothing in noise', async () => {
    const noise = solidImage(320, 240, [0, 0, 0]);
    let seed = 12345;
    for (let i = 0; i < noise.data.length; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      noise.data[i] = seed >>> 24;
    }
    expect((await runOcr(noise, models, charset)).regions).toEqual([]);
  });
});
