import * as fs from 'node:fs';
import * as path from 'node:path';
import * as jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { TritonError } from 'tstriton';
import { cropImage, decodeImage, resizeBilinear, sniffImageFormat, type RgbImage } from '../../../examples/ocr/image';

const FIXTURES = path.join(__dirname, '../../fixtures/ocr');
const fixture = (name: string): Buffer => fs.readFileSync(path.join(FIXTURES, name));

function encodePng(width: number, height: number, rgba: readonly number[]): Buffer {
  const png = new PNG({ width, height });
  png.data = Buffer.from(rgba);
  return PNG.sync.write(png);
}

function pixel(image: RgbImage, x: number, y: number): number[] {
  const i = (y * image.width + x) * 3;
  return [...image.data.subarray(i, i + 3)];
}

function expectInvalid(fn: () => unknown, message: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TritonError);
  expect((caught as TritonError).code).toBe('INVALID_ARGUMENT');
  expect((caught as TritonError).message).toMatch(message);
}

describe('sniffImageFormat', () => {
  it.each([
    ['png', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0], 'png'],
    ['jpeg', [0xff, 0xd8, 0xff, 0xe0], 'jpeg'],
    ['gif', [...Buffer.from('GIF89a')], undefined],
    ['short png prefix', [0x89, 0x50, 0x4e], undefined],
    ['empty', [], undefined],
  ])('%s', (_name, bytes, expected) => {
    expect(sniffImageFormat(Uint8Array.from(bytes))).toBe(expected);
  });
});

describe('decodeImage', () => {
  it('decodes PNG pixels exactly, compositing transparency over white', () => {
    const bytes = encodePng(3, 1, [255, 0, 0, 255, 0, 0, 255, 0, 0, 0, 0, 128]);
    const image = decodeImage(bytes);
    expect([image.width, image.height]).toEqual([3, 1]);
    expect([...image.data]).toEqual([255, 0, 0, 255, 255, 255, 127, 127, 127]);
  });

  it('decodes JPEG to RGB within compression error', () => {
    const rgba = Buffer.alloc(16 * 8 * 4);
    for (let i = 0; i < rgba.length; i += 4) rgba.set([200, 30, 60, 255], i);
    const image = decodeImage(jpeg.encode({ width: 16, height: 8, data: rgba }, 95).data);
    expect([image.width, image.height, image.data.length]).toEqual([16, 8, 16 * 8 * 3]);
    const [r, g, b] = pixel(image, 7, 3);
    expect(Math.abs(r! - 200)).toBeLessThanOrEqual(4);
    expect(Math.abs(g! - 30)).toBeLessThanOrEqual(4);
    expect(Math.abs(b! - 60)).toBeLessThanOrEqual(4);
  });

  it('decodes the fixtures: white page, dark ink', () => {
    for (const [name, width, height] of [['hello-world.png', 640, 160], ['two-lines.jpg', 640, 220]] as const) {
      const image = decodeImage(fixture(name));
      expect([image.width, image.height]).toEqual([width, height]);
      expect(pixel(image, 0, 0).every((v) => v > 240)).toBe(true);
      expect(image.data.some((v) => v < 40)).toBe(true);
    }
  });

  it.each([
    ['a grey JPEG', 'grey.jpg', 8, 90, 2],
    ['a grey PNG with alpha, over white', 'grey-alpha.png', 4, 127, 0],
    ['a 16-bit grey PNG, scaled to 8 bits', 'grey16.png', 4, 128, 1],
  ])('decodes %s to RGB', (_name, file, side, grey, tolerance) => {
    const image = decodeImage(fixture(file));
    expect([image.width, image.height, image.data.length]).toEqual([side, side, side * side * 3]);
    for (const v of image.data) expect(Math.abs(v - grey)).toBeLessThanOrEqual(tolerance);
  });

  it('rejects bytes that are neither PNG nor JPEG', () => {
    expectInvalid(() => decodeImage(Buffer.from('GIF89a...')), /expected PNG or JPEG bytes, got 9 bytes starting 474946/);
    expectInvalid(() => decodeImage(new Uint8Array()), /expected PNG or JPEG.*\(empty\)/);
  });

  it.each([
    ['truncated PNG', () => fixture('hello-world.png').subarray(0, 2000), /corrupt PNG/],
    ['PNG with a broken IDAT', () => corrupt(fixture('hello-world.png'), 200), /corrupt PNG/],
    ['truncated JPEG', () => fixture('two-lines.jpg').subarray(0, 3000), /corrupt JPEG/],
    ['JPEG magic then garbage', () => Buffer.from([0xff, 0xd8, 0xff, 0x00, 1, 2, 3]), /corrupt JPEG/],
  ])('rejects a %s', (_name, bytes, message) => {
    expectInvalid(() => decodeImage(bytes()), message);
  });

  it('rejects images above maxPixels before decoding them', () => {
    expectInvalid(() => decodeImage(fixture('hello-world.png'), { maxPixels: 640 * 160 - 1 }), /640x160 exceeds the limit of 102399 pixels/);
    expectInvalid(() => decodeImage(fixture('two-lines.jpg'), { maxPixels: 100_000 }), /640x220 exceeds the limit of 100000 pixels/);
    expect(decodeImage(fixture('hello-world.png'), { maxPixels: 640 * 160 }).width).toBe(640);
  });
});

function corrupt(bytes: Buffer, at: number): Buffer {
  const copy = Buffer.from(bytes);
  for (let i = at; i < at + 16; i++) copy[i] = copy[i]! ^ 0xff;
  return copy;
}

describe('resizeBilinear', () => {
  const ramp: RgbImage = { width: 2, height: 1, data: Uint8Array.from([0, 0, 0, 255, 255, 255]) };

  it('samples at pixel centres when enlarging, as OpenCV INTER_LINEAR', () => {
    const out = resizeBilinear(ramp, 4, 1);
    expect([0, 1, 2, 3].map((x) => pixel(out, x, 0)[0])).toEqual([0, 64, 191, 255]);
  });

  it('averages 2x2 blocks when halving', () => {
    const image: RgbImage = { width: 4, height: 2, data: new Uint8Array(24) };
    [10, 20, 100, 200, 30, 40, 0, 4].forEach((v, i) => image.data.fill(v, i * 3, i * 3 + 3));
    const out = resizeBilinear(image, 2, 1);
    expect([...out.data]).toEqual([25, 25, 25, 76, 76, 76]);
  });

  it('rejects a non-positive or fractional size', () => {
    expectInvalid(() => resizeBilinear(ramp, 0, 1), /positive integer size, got 0x1/);
    expectInvalid(() => resizeBilinear(ramp, 2.5, 1), /positive integer size/);
  });
});

describe('cropImage', () => {
  // Pixel (x, y) holds [x, y, 7] so every copied pixel tells where it came from.
  const image: RgbImage = { width: 5, height: 4, data: new Uint8Array(60) };
  for (let y = 0; y < 4; y++) for (let x = 0; x < 5; x++) image.data.set([x, y, 7], (y * 5 + x) * 3);

  it('copies the box, x1 and y1 exclusive', () => {
    const out = cropImage(image, [1, 2, 4, 4]);
    expect([out.width, out.height]).toEqual([3, 2]);
    expect(pixel(out, 0, 0)).toEqual([1, 2, 7]);
    expect(pixel(out, 2, 1)).toEqual([3, 3, 7]);
  });

  it('clips a box reaching past the edges', () => {
    const out = cropImage(image, [-3, -1, 2.2, 99]);
    expect([out.width, out.height]).toEqual([3, 4]);
    expect(pixel(out, 2, 3)).toEqual([2, 3, 7]);
  });

  it('rejects a box outside the image', () => {
    expectInvalid(() => cropImage(image, [5, 0, 9, 2]), /box \[5,0,9,2\] lies outside the 5x4 image/);
  });
});
