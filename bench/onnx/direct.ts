/**
 * The baseline of the ONNX benchmark: the same models run directly with onnxruntime-node in this process's main
 * thread, with our instances' session options, and the OCR pipeline run in process (no server). Timed on request.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ort from 'onnxruntime-node';
import { loadCharset } from '../../examples/ocr/charset';
import { decodeImage } from '../../examples/ocr/image';
import { ocrModelFiles } from '../../examples/ocr/ocr-model-files';
import { runOcr } from '../../examples/ocr/ocr-pipeline';
import { loadOnnxOcrModels } from '../../examples/ocr/onnx-ocr-models';
import { runChild } from '../harness/child';
import { repoRoot } from '../harness/repo-root';
import { batchInput, benchModels, fingerprint, SESSION_OPTIONS, type ModelKey } from './models';

export type DirectCall =
  | { kind: 'model'; model: ModelKey; batch: number; warmup: number; count: number }
  | { kind: 'ocr'; warmup: number; count: number };

export interface DirectResult {
  /** Milliseconds per run (a model run, or one image through the whole pipeline). */
  times: number[];
  fingerprint?: { first: number[]; sum: number };
  texts?: string[];
}

runChild(async () => {
  const root = repoRoot();
  const models = benchModels(root);
  const sessions = new Map<ModelKey, ort.InferenceSession>();
  for (const m of Object.values(models)) sessions.set(m.key, await ort.InferenceSession.create(m.path, { ...SESSION_OPTIONS, executionProviders: [...SESSION_OPTIONS.executionProviders] }));
  const files = ocrModelFiles();
  const charset = loadCharset(files.dictionary);
  const ocr = await loadOnnxOcrModels(files, { ...SESSION_OPTIONS, executionProviders: [...SESSION_OPTIONS.executionProviders] });
  const image = fs.readFileSync(path.join(root, 'test', 'fixtures', 'ocr', 'hello-world.png'));

  const call = async (c: DirectCall): Promise<DirectResult> => {
    const times: number[] = [];
    if (c.kind === 'ocr') {
      let texts: string[] = [];
      for (let i = 0; i < c.warmup + c.count; i++) {
        const t0 = performance.now();
        const result = await runOcr(decodeImage(image), ocr, charset);
        if (i >= c.warmup) times.push(performance.now() - t0);
        texts = result.regions.map((r) => r.text);
      }
      return { times, texts };
    }
    const m = models[c.model];
    const session = sessions.get(c.model) as ort.InferenceSession;
    const { shape, data } = batchInput(m, c.batch);
    let out: Float32Array | undefined;
    for (let i = 0; i < c.warmup + c.count; i++) {
      const t0 = performance.now();
      const results = await session.run({ [m.input]: new ort.Tensor('float32', data, shape) }, [m.output]);
      if (i >= c.warmup) times.push(performance.now() - t0);
      out = (results[m.output] as ort.Tensor).data as Float32Array;
    }
    return { times, fingerprint: out && fingerprint(out) };
  };

  return {
    port: 0,
    call: (payload) => call(payload as DirectCall),
    stop: async () => {
      await Promise.all([...sessions.values()].map((s) => s.release()));
      await ocr.release();
    },
  };
});
