import * as ort from 'onnxruntime-node';
import type { Tensor } from 'tstriton';
import { ocrModelFiles, type OcrModelFiles } from './ocr-model-files';
import type { OcrModels } from './ocr-pipeline';

/** The OCR models run in this process by onnxruntime-node; `release()` frees both sessions. */
export interface OnnxOcrModels extends OcrModels {
  release(): Promise<void>;
}

/** Loads PP-OCRv4 detection and recognition into onnxruntime-node sessions. */
export async function loadOnnxOcrModels(
  files: OcrModelFiles = ocrModelFiles(),
  sessionOptions: ort.InferenceSession.SessionOptions = {},
): Promise<OnnxOcrModels> {
  const [det, rec] = await Promise.all([
    ort.InferenceSession.create(files.detection, sessionOptions),
    ort.InferenceSession.create(files.recognition, sessionOptions),
  ]);
  return {
    detect: (input) => runSingle(det, input),
    recognize: (input) => runSingle(rec, input),
    release: async () => {
      await Promise.all([det.release(), rec.release()]);
    },
  };
}

async function runSingle(session: ort.InferenceSession, input: Tensor<'FP32'>): Promise<Tensor<'FP32'>> {
  const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', input.data, input.shape) };
  const out = (await session.run(feeds))[session.outputNames[0]!]!;
  return { dtype: 'FP32', shape: [...out.dims], data: out.data as Float32Array };
}
