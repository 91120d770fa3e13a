import type { RgbImage } from './image';

/** Per-channel normalisation `(x / 255 - mean) / std`, listed in B, G, R order. */
export interface ChannelNorm {
  readonly mean: readonly [number, number, number];
  readonly std: readonly [number, number, number];
}

/**
 * Writes `image` as three normalised planes, B then G then R, into `target` from `offset`.
 *
 * PaddleOCR reads images with OpenCV, so its models were trained on BGR planes and its mean/std lists
 * apply to B, G, R in that order; feeding RGB would swap the statistics of the red and blue channels.
 * Each plane is `image.height` rows of `rowStride` floats; the image fills the left `image.width`
 * columns and the rest of each row is left as it was (the caller's padding).
 */
export function writeBgrPlanes(
  image: RgbImage,
  norm: ChannelNorm,
  target: Float32Array,
  offset: number,
  rowStride: number = image.width,
): void {
  const plane = image.height * rowStride;
  const { data, width, height } = image;
  for (let p = 0; p < 3; p++) {
    const rgbChannel = 2 - p;
    const scale = 1 / (255 * norm.std[p]!);
    const shift = norm.mean[p]! / norm.std[p]!;
    const base = offset + p * plane;
    for (let y = 0; y < height; y++) {
      const row = base + y * rowStride;
      let src = y * width * 3 + rgbChannel;
      for (let x = 0; x < width; x++, src += 3) target[row + x] = data[src]! * scale - shift;
    }
  }
}
