import type { Tensor } from 'tstriton';
import type { RgbImage } from '../../../examples/ocr/image';

/** An image of one colour. */
export function solidImage(width: number, height: number, rgb: readonly [number, number, number]): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 3) data.set(rgb, i);
  return { width, height, data };
}

/** A rectangle of a probability map or an image: `[x0, y0, x1, y1]`, x1 and y1 exclusive. */
export type Rect = readonly [number, number, number, number];

/** Paints `rgb` into `image` inside `rect`, in place. */
export function fillRect(image: RgbImage, rect: Rect, rgb: readonly [number, number, number]): void {
  for (let y = rect[1]; y < rect[3]; y++) {
    for (let x = rect[0]; x < rect[2]; x++) image.data.set(rgb, (y * image.width + x) * 3);
  }
}

/** A detection output `[1, 1, height, width]` at `background`, with each rect set to its probability. */
export function probabilityMap(
  width: number,
  height: number,
  regions: readonly { rect: Rect; p: number }[],
  background = 0.01,
): Tensor<'FP32'> {
  const data = new Float32Array(width * height).fill(background);
  for (const { rect, p } of regions) {
    for (let y = rect[1]; y < rect[3]; y++) data.fill(p, y * width + rect[0], y * width + rect[2]);
  }
  return { dtype: 'FP32', shape: [1, 1, height, width], data };
}

/** Recogniser scores `[N, T, C]`: at each step the given class gets `p`, the rest share what is left. */
export function ctcScores(samples: readonly (readonly { cls: number; p: number }[])[], classes: number): Tensor<'FP32'> {
  const steps = samples[0]?.length ?? 0;
  const data = new Float32Array(samples.length * steps * classes);
  samples.forEach((sample, i) => {
    if (sample.length !== steps) throw new Error('every sample needs the same number of steps');
    sample.forEach(({ cls, p }, t) => {
      const row = (i * steps + t) * classes;
      data.fill((1 - p) / (classes - 1), row, row + classes);
      data[row + cls] = p;
    });
  });
  return { dtype: 'FP32', shape: [samples.length, steps, classes], data };
}
