import { TritonError, type Tensor } from 'tstriton';
import { postprocessDetection, preprocessDetection, type DetectionOptions } from './detection';
import { cropImage, type Box, type RgbImage } from './image';
import { groupIntoLines } from './reading-order';
import { decodeCtcGreedy, preprocessRecognition, type RecognitionOptions, type RecognizedText } from './recognition';

/** Options of a model call. */
export interface OcrModelCallOptions {
  readonly signal?: AbortSignal;
}

/** The two model calls the OCR pipeline makes; the caller decides how they run (in process, over Triton). */
export interface OcrModels {
  /** PP-OCRv4 detection: `[1, 3, H, W]` → probability map `[1, 1, H, W]`. */
  detect(input: Tensor<'FP32'>, options: OcrModelCallOptions): Promise<Tensor<'FP32'>>;
  /** PP-OCRv4 recognition: `[N, 3, 48, W]` → softmax scores `[N, T, C]`. */
  recognize(input: Tensor<'FP32'>, options: OcrModelCallOptions): Promise<Tensor<'FP32'>>;
}

/** Options of {@link runOcr}. */
export interface OcrOptions {
  readonly detection?: DetectionOptions;
  readonly recognition?: RecognitionOptions;
  /** Crops per recognition call (PaddleOCR `rec_batch_num`). Default 6. */
  readonly recognitionBatchSize?: number;
  /** Regions read with a lower confidence are dropped (PaddleOCR `drop_score`). Default 0.5. */
  readonly dropScore?: number;
  readonly signal?: AbortSignal;
}

/** One detected text region and what was read in it. */
export interface OcrRegion extends RecognizedText {
  /** `[x0, y0, x1, y1]` in the source image's pixels. */
  readonly box: Box;
}

/** What {@link runOcr} found: the regions in reading order and the text of each line. */
export interface OcrResult {
  readonly regions: OcrRegion[];
  /** One string per text line, top to bottom; regions on one line are joined by a space. */
  readonly lines: string[];
}

/** Detects text regions in an image, reads each and returns them in reading order. */
export async function runOcr(image: RgbImage, models: OcrModels, charset: readonly string[], options: OcrOptions = {}): Promise<OcrResult> {
  const { signal } = options;
  const batchSize = options.recognitionBatchSize ?? 6;
  const dropScore = options.dropScore ?? 0.5;
  throwIfAborted(signal);
  const det = preprocessDetection(image, options.detection);
  const map = await models.detect(det.tensor, { signal });
  const boxes = postprocessDetection(map, image, options.detection);
  const crops = boxes.map((box) => cropImage(image, box));
  // Crops of similar shape share a batch, so little of each batch tensor is padding.
  const order = crops.map((_, i) => i).sort((a, b) => aspect(crops[a]!) - aspect(crops[b]!));
  const read: RecognizedText[] = new Array<RecognizedText>(crops.length);
  for (let start = 0; start < order.length; start += batchSize) {
    throwIfAborted(signal);
    const batch = order.slice(start, start + batchSize);
    const input = preprocessRecognition(batch.map((i) => crops[i]!), options.recognition);
    const texts = decodeCtcGreedy(await models.recognize(input, { signal }), charset);
    batch.forEach((i, k) => (read[i] = texts[k]!));
  }
  const regions = boxes
    .map((box, i): OcrRegion => ({ box, ...read[i]! }))
    .filter((r) => r.confidence >= dropScore && r.text.trim() !== '');
  const lines = groupIntoLines(regions, (r) => r.box);
  return { regions: lines.flat(), lines: lines.map((line) => line.map((r) => r.text.trim()).join(' ')) };
}

function aspect(image: RgbImage): number {
  return image.width / image.height;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new TritonError('CANCELLED', 'OCR cancelled', { cause: signal.reason });
}
