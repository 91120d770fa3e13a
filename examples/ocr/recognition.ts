import { TritonError, type Tensor } from 'tstriton';
import { writeBgrPlanes, type ChannelNorm } from './bgr-planes';
import { checkCharset } from './charset';
import { resizeBilinear, type RgbImage } from './image';

/** Parameters of PP-OCRv4 recognition preprocessing; the defaults are PaddleOCR's `3,48,320`. */
export interface RecognitionOptions {
  /** Every crop is scaled to this height (the model's fixed input height). */
  readonly height?: number;
  /** The batch is at least this wide, so short words are not stretched. */
  readonly minWidth?: number;
  /** Wider crops are squeezed to this width, bounding the tensor a very long line can ask for. */
  readonly maxWidth?: number;
}

/** The recognition parameters used when an option is not given. */
export const RECOGNITION_DEFAULTS: Required<RecognitionOptions> = { height: 48, minWidth: 320, maxWidth: 3200 };

/** `(x / 255 - 0.5) / 0.5` on every channel. */
export const RECOGNITION_NORM: ChannelNorm = { mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] };

/** The text read from one crop and the mean probability of its characters (0 when empty). */
export interface RecognizedText {
  readonly text: string;
  readonly confidence: number;
}

/** Width a crop takes at the model's height, keeping its aspect ratio. */
function scaledWidth(crop: RgbImage, height: number): number {
  return Math.max(1, Math.ceil((height * crop.width) / crop.height));
}

/**
 * Builds the recognition input `[N, 3, 48, W]` for a batch of crops.
 *
 * Each crop is scaled to height 48 keeping its aspect ratio and left-aligned; W is the widest crop's
 * width (at least `minWidth`). The padding stays 0 after normalisation, i.e. mid-grey, as in PaddleOCR.
 */
export function preprocessRecognition(crops: readonly RgbImage[], options: RecognitionOptions = {}): Tensor<'FP32'> {
  const { height, minWidth, maxWidth } = { ...RECOGNITION_DEFAULTS, ...options };
  if (crops.length === 0) throw new TritonError('INVALID_ARGUMENT', 'recognition: expected at least one crop');
  const width = Math.min(maxWidth, Math.max(minWidth, ...crops.map((c) => scaledWidth(c, height))));
  const sample = 3 * height * width;
  const data = new Float32Array(crops.length * sample);
  crops.forEach((crop, i) => {
    const resized = resizeBilinear(crop, Math.min(width, scaledWidth(crop, height)), height);
    writeBgrPlanes(resized, RECOGNITION_NORM, data, i * sample, width);
  });
  return { dtype: 'FP32', shape: [crops.length, 3, height, width], data };
}

/**
 * Greedy CTC decoding of the recogniser's softmax output `[N, T, C]`.
 *
 * Takes the best class per time step, merges repeats, drops blanks (class 0); the confidence is the
 * mean of the kept steps' probabilities, as PaddleOCR's `CTCLabelDecode` reports it.
 */
export function decodeCtcGreedy(output: Tensor<'FP32'>, charset: readonly string[]): RecognizedText[] {
  const { shape, data } = output;
  if (shape.length !== 3 || data.length !== shape[0]! * shape[1]! * shape[2]!) {
    throw new TritonError('INFERENCE_FAILED', `recognition: expected scores [N,T,C], got [${shape.join(',')}] with ${data.length} values`);
  }
  const [n, steps, classes] = shape as [number, number, number];
  checkCharset(classes, charset);
  const results: RecognizedText[] = [];
  for (let i = 0; i < n; i++) {
    let text = '';
    let sum = 0;
    let kept = 0;
    let previous = -1;
    for (let t = 0; t < steps; t++) {
      const row = (i * steps + t) * classes;
      let best = 0;
      let bestScore = data[row]!;
      for (let c = 1; c < classes; c++) {
        if (data[row + c]! > bestScore) {
          bestScore = data[row + c]!;
          best = c;
        }
      }
      if (best !== 0 && best !== previous) {
        text += charset[best]!;
        sum += bestScore;
        kept++;
      }
      previous = best;
    }
    results.push({ text, confidence: kept === 0 ? 0 : sum / kept });
  }
  return results;
}
