import * as jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { TritonError } from 'tstriton';

/** An 8-bit RGB image, rows top to bottom, pixels interleaved as R, G, B. */
export interface RgbImage {
  readonly width: number;
  readonly height: number;
  /** `width * height * 3` bytes. */
  readonly data: Uint8Array;
}

/** An axis-aligned box in pixels: `[x0, y0, x1, y1]`, x1 and y1 exclusive. */
export type Box = readonly [x0: number, y0: number, x1: number, y1: number];

/** Options of {@link decodeImage}. */
export interface DecodeOptions {
  /** Largest image accepted, in pixels, checked before the pixels are inflated. Default 40 megapixels. */
  readonly maxPixels?: number;
}

/** The image formats {@link decodeImage} reads. */
export type ImageFormat = 'png' | 'jpeg';

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG_MAGIC = [0xff, 0xd8, 0xff];
const DEFAULT_MAX_PIXELS = 40_000_000;

/** Tells PNG from JPEG by the first bytes; undefined for anything else. */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | undefined {
  if (startsWith(bytes, PNG_MAGIC)) return 'png';
  if (startsWith(bytes, JPEG_MAGIC)) return 'jpeg';
  return undefined;
}

/** Decodes PNG or JPEG bytes to RGB; transparent pixels are composited over white. */
export function decodeImage(bytes: Uint8Array, options: DecodeOptions = {}): RgbImage {
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS;
  const format = sniffImageFormat(bytes);
  if (format === undefined) {
    const head = Buffer.from(bytes.subarray(0, 8)).toString('hex');
    throw new TritonError('INVALID_ARGUMENT', `image: expected PNG or JPEG bytes, got ${bytes.length} bytes starting ${head || '(empty)'}`);
  }
  try {
    return format === 'png' ? decodePng(bytes, maxPixels) : decodeJpeg(bytes, maxPixels);
  } catch (err) {
    if (err instanceof TritonError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new TritonError('INVALID_ARGUMENT', `image: corrupt ${format.toUpperCase()} (${reason})`, { cause: err });
  }
}

function decodePng(bytes: Uint8Array, maxPixels: number): RgbImage {
  // IHDR is always the first chunk: width and height sit at bytes 16..23, readable before inflating.
  if (bytes.length >= 24) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    checkSize(view.getUint32(16), view.getUint32(20), maxPixels);
  }
  const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return rgbaToRgb(png.width, png.height, png.data);
}

function decodeJpeg(bytes: Uint8Array, maxPixels: number): RgbImage {
  const size = jpegFrameSize(bytes);
  if (size) checkSize(size.width, size.height, maxPixels);
  // tolerantDecoding would hand back a half-grey picture for a truncated file; a clear error is better.
  const out = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: false, tolerantDecoding: false });
  return { width: out.width, height: out.height, data: out.data };
}

/** Width and height from the first start-of-frame segment, found by walking the marker segments. */
function jpegFrameSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  let at = 2;
  while (at + 9 <= bytes.length && bytes[at] === 0xff) {
    const marker = bytes[at + 1]!;
    // SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: (bytes[at + 5]! << 8) | bytes[at + 6]!, width: (bytes[at + 7]! << 8) | bytes[at + 8]! };
    }
    at += 2 + ((bytes[at + 2]! << 8) | bytes[at + 3]!);
  }
  return undefined;
}

function checkSize(width: number, height: number, maxPixels: number): void {
  if (width * height > maxPixels) {
    throw new TritonError('INVALID_ARGUMENT', `image: ${width}x${height} exceeds the limit of ${maxPixels} pixels`);
  }
}

function rgbaToRgb(width: number, height: number, rgba: Uint8Array): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; j < data.length; i += 4, j += 3) {
    const a = rgba[i + 3]!;
    const keep = a / 255;
    const white = 255 * (1 - keep);
    data[j] = Math.round(rgba[i]! * keep + white);
    data[j + 1] = Math.round(rgba[i + 1]! * keep + white);
    data[j + 2] = Math.round(rgba[i + 2]! * keep + white);
  }
  return { width, height, data };
}

/** Resizes with bilinear interpolation, sampling at pixel centres as OpenCV's INTER_LINEAR does. */
export function resizeBilinear(image: RgbImage, width: number, height: number): RgbImage {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new TritonError('INVALID_ARGUMENT', `resize: expected a positive integer size, got ${width}x${height}`);
  }
  if (width === image.width && height === image.height) return image;
  const src = image.data;
  const out = new Uint8Array(width * height * 3);
  const xs = axisWeights(image.width, width);
  const ys = axisWeights(image.height, height);
  const rowStride = image.width * 3;
  for (let y = 0; y < height; y++) {
    const r0 = ys.lo[y]! * rowStride;
    const r1 = ys.hi[y]! * rowStride;
    const fy = ys.frac[y]!;
    for (let x = 0; x < width; x++) {
      const c0 = xs.lo[x]! * 3;
      const c1 = xs.hi[x]! * 3;
      const fx = xs.frac[x]!;
      const o = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) {
        const top = src[r0 + c0 + c]! + (src[r0 + c1 + c]! - src[r0 + c0 + c]!) * fx;
        const bottom = src[r1 + c0 + c]! + (src[r1 + c1 + c]! - src[r1 + c0 + c]!) * fx;
        out[o + c] = Math.round(top + (bottom - top) * fy);
      }
    }
  }
  return { width, height, data: out };
}

/** Per destination index along one axis: the two source indices and the weight of the second. */
function axisWeights(srcLen: number, dstLen: number): { lo: Int32Array; hi: Int32Array; frac: Float32Array } {
  const lo = new Int32Array(dstLen);
  const hi = new Int32Array(dstLen);
  const frac = new Float32Array(dstLen);
  const scale = srcLen / dstLen;
  for (let i = 0; i < dstLen; i++) {
    const s = Math.min(Math.max((i + 0.5) * scale - 0.5, 0), srcLen - 1);
    const l = Math.floor(s);
    lo[i] = l;
    hi[i] = Math.min(l + 1, srcLen - 1);
    frac[i] = s - l;
  }
  return { lo, hi, frac };
}

/** Copies the pixels inside `box`, clipped to the image; throws if nothing of the box is inside. */
export function cropImage(image: RgbImage, box: Box): RgbImage {
  const x0 = Math.max(0, Math.floor(box[0]));
  const y0 = Math.max(0, Math.floor(box[1]));
  const x1 = Math.min(image.width, Math.ceil(box[2]));
  const y1 = Math.min(image.height, Math.ceil(box[3]));
  if (x1 <= x0 || y1 <= y0) {
    throw new TritonError('INVALID_ARGUMENT', `crop: box [${box.join(',')}] lies outside the ${image.width}x${image.height} image`);
  }
  const width = x1 - x0;
  const height = y1 - y0;
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const from = ((y0 + y) * image.width + x0) * 3;
    data.set(image.data.subarray(from, from + width * 3), y * width * 3);
  }
  return { width, height, data };
}

function startsWith(bytes: Uint8Array, magic: readonly number[]): boolean {
  return bytes.length >= magic.length && magic.every((b, i) => bytes[i] === b);
}
