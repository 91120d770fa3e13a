/**
 * Reads the text in images with the OCR pipeline and onnxruntime-node, no server involved.
 *
 *   npm run build && node dist/examples/ocr/ocr-direct.js [--threads=N] image.png [more.jpg ...]
 *
 * `--threads` sets onnxruntime's intra-op threads (default: one per core).
 */
import * as fs from 'node:fs';
import type { Tensor } from 'tstriton';
import { loadCharset } from './charset';
import { decodeImage } from './image';
import { ocrModelFiles } from './ocr-model-files';
import { runOcr, type OcrModels } from './ocr-pipeline';
import { loadOnnxOcrModels } from './onnx-ocr-models';

async function main(args: readonly string[]): Promise<void> {
  const threads = args.find((a) => a.startsWith('--threads='));
  const paths = args.filter((a) => a !== threads);
  if (paths.length === 0) {
    console.error('usage: node dist/examples/ocr/ocr-direct.js [--threads=N] IMAGE...');
    process.exitCode = 2;
    return;
  }
  const files = ocrModelFiles();
  const charset = loadCharset(files.dictionary);
  const onnx = await loadOnnxOcrModels(files, threads ? { intraOpNumThreads: Number(threads.slice('--threads='.length)) } : {});
  const time = { detect: 0, recognize: 0 };
  const timed = (name: keyof typeof time) => async (input: Tensor<'FP32'>): Promise<Tensor<'FP32'>> => {
    const start = performance.now();
    const out = await onnx[name](input, {});
    time[name] += performance.now() - start;
    return out;
  };
  const models: OcrModels = { detect: timed('detect'), recognize: timed('recognize') };
  try {
    for (const file of paths) {
      time.detect = time.recognize = 0;
      const start = performance.now();
      const image = decodeImage(fs.readFileSync(file));
      const result = await runOcr(image, models, charset);
      const total = performance.now() - start;
      console.log(`${file} ${image.width}x${image.height}: ${result.regions.length} regions, ` +
        `det ${time.detect.toFixed(0)} ms, rec ${time.recognize.toFixed(0)} ms, total ${total.toFixed(0)} ms`);
      for (const r of result.regions) console.log(`  [${r.box.join(',')}] ${r.confidence.toFixed(3)} ${JSON.stringify(r.text)}`);
      for (const line of result.lines) console.log(`  | ${line}`);
    }
  } finally {
    await onnx.release();
  }
}

void main(process.argv.slice(2));
