import { TritonError, type Tensor } from 'tstriton';
import { writeBgrPlanes, type ChannelNorm } from './bgr-planes';
import { resizeBilinear, type Box, type RgbImage } from './image';
import { sortReadingOrder } from './reading-order';

/** Parameters of PP-OCRv4 detection pre- and postprocessing; the defaults are PaddleOCR's. */
export interface DetectionOptions {
  /** The longer side is scaled down to this many pixels if larger (PaddleOCR `det_limit_side_len`). */
  readonly limitSideLen?: number;
  /** A map pixel is text when its probability exceeds this (`det_db_thresh`). */
  readonly threshold?: number;
  /** A region is kept when its mean probability reaches this (`det_db_box_thresh`). */
  readonly boxThreshold?: number;
  /** How far a region grows back out of the shrunk text kernel the model predicts (`det_db_unclip_ratio`). */
  readonly unclipRatio?: number;
  /** Regions whose shorter side is below this many map pixels are dropped. */
  readonly minSize?: number;
  /** At most this many regions are considered (`max_candidates`). */
  readonly maxCandidates?: number;
}

/** The detection parameters used when an option is not given. */
export const DETECTION_DEFAULTS: Required<DetectionOptions> = {
  limitSideLen: 960,
  threshold: 0.3,
  boxThreshold: 0.6,
  unclipRatio: 1.5,
  minSize: 3,
  maxCandidates: 1000,
};

/** ImageNet statistics, in the B, G, R order PaddleOCR applies them (see {@link writeBgrPlanes}). */
export const DETECTION_NORM: ChannelNorm = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** The detection model's input and the size of the image it was made from. */
export interface DetectionInput {
  /** `[1, 3, H, W]`, H and W multiples of 32. */
  readonly tensor: Tensor<'FP32'>;
  readonly sourceWidth: number;
  readonly sourceHeight: number;
}

const STRIDE = 32;

/** The model input size for an image: longer side limited, both sides rounded to multiples of 32. */
export function detectionInputSize(width: number, height: number, limitSideLen: number = DETECTION_DEFAULTS.limitSideLen): { width: number; height: number } {
  const longer = Math.max(width, height);
  const ratio = longer > limitSideLen ? limitSideLen / longer : 1;
  const round = (side: number): number => Math.max(Math.round(Math.trunc(side * ratio) / STRIDE) * STRIDE, STRIDE);
  return { width: round(width), height: round(height) };
}

/** Resizes and normalises an image into the PP-OCRv4 detection input, NCHW FP32. */
export function preprocessDetection(image: RgbImage, options: DetectionOptions = {}): DetectionInput {
  const size = detectionInputSize(image.width, image.height, options.limitSideLen ?? DETECTION_DEFAULTS.limitSideLen);
  const resized = resizeBilinear(image, size.width, size.height);
  const data = new Float32Array(3 * size.width * size.height);
  writeBgrPlanes(resized, DETECTION_NORM, data, 0);
  return {
    tensor: { dtype: 'FP32', shape: [1, 3, size.height, size.width], data },
    sourceWidth: image.width,
    sourceHeight: image.height,
  };
}

/**
 * Turns the probability map `[1, 1, H, W]` into text boxes in source-image pixels, in reading order.
 *
 * Follows PaddleOCR's DB postprocessing with axis-aligned boxes: threshold the map, take 8-connected
 * components (the regions OpenCV's contours would trace), drop small or low-scoring ones, expand each
 * box by the unclip distance `area * ratio / perimeter` and scale it to the source image.
 */
export function postprocessDetection(
  probabilityMap: Tensor<'FP32'>,
  source: { readonly width: number; readonly height: number },
  options: DetectionOptions = {},
): Box[] {
  const opts = { ...DETECTION_DEFAULTS, ...options };
  const { shape, data } = probabilityMap;
  if (shape.length !== 4 || shape[0] !== 1 || shape[1] !== 1 || data.length !== shape[2]! * shape[3]!) {
    throw new TritonError('INFERENCE_FAILED', `detection: expected a probability map [1,1,H,W], got [${shape.join(',')}] with ${data.length} values`);
  }
  const mapHeight = shape[2]!;
  const mapWidth = shape[3]!;
  const scaleX = source.width / mapWidth;
  const scaleY = source.height / mapHeight;
  const boxes: Box[] = [];
  for (const region of connectedRegions(data, mapWidth, mapHeight, opts.threshold, opts.maxCandidates)) {
    const w = region.x1 - region.x0;
    const h = region.y1 - region.y0;
    if (Math.min(w, h) < opts.minSize || region.meanScore < opts.boxThreshold) continue;
    const d = (w * h * opts.unclipRatio) / (2 * (w + h));
    if (Math.min(w, h) + 2 * d < opts.minSize + 2) continue;
    const x0 = clamp(Math.round((region.x0 - d) * scaleX), 0, source.width);
    const y0 = clamp(Math.round((region.y0 - d) * scaleY), 0, source.height);
    const x1 = clamp(Math.round((region.x1 + d) * scaleX), 0, source.width);
    const y1 = clamp(Math.round((region.y1 + d) * scaleY), 0, source.height);
    if (x1 > x0 && y1 > y0) boxes.push([x0, y0, x1, y1]);
  }
  return sortReadingOrder(boxes);
}

/** One thresholded component: its bounding box in map pixels (x1, y1 exclusive) and mean probability. */
interface Region {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
  meanScore: number;
}

/**
 * The 8-connected components of `probs > threshold`, scanned row by row.
 *
 * The score is the mean probability over the component's own pixels, like PaddleOCR's "slow" score
 * mode: a mean over the bounding box would punish slanted lines for the background their box takes in.
 */
function connectedRegions(probs: Float32Array, width: number, height: number, threshold: number, maxRegions: number): Region[] {
  const seen = new Uint8Array(width * height);
  const stack = new Int32Array(width * height);
  const regions: Region[] = [];
  for (let start = 0; start < probs.length && regions.length < maxRegions; start++) {
    if (seen[start] || !(probs[start]! > threshold)) continue;
    seen[start] = 1;
    let top = 0;
    stack[top++] = start;
    let x0 = width, y0 = height, x1 = 0, y1 = 0, sum = 0, count = 0;
    while (top > 0) {
      const p = stack[--top]!;
      const x = p % width;
      const y = (p - x) / width;
      x0 = Math.min(x0, x);
      x1 = Math.max(x1, x + 1);
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y + 1);
      sum += probs[p]!;
      count++;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          if (nx < 0 || nx >= width) continue;
          const q = ny * width + nx;
          if (!seen[q] && probs[q]! > threshold) {
            seen[q] = 1;
            stack[top++] = q;
          }
        }
      }
    }
    regions.push({ x0, y0, x1, y1, meanScore: sum / count });
  }
  return regions;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(Math.max(v, lo), hi);
}
