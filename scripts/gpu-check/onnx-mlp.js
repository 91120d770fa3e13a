// Writes the GPU check's mlp: `layers` × (width×width MatMul + Relu) with a symbolic batch dim, FP32 or FP16,
// weights uniform in ±sqrt(3/width) from a seeded generator (the same file for the same arguments). The ONNX
// protobuf is written by hand: the GPU machine has node, not Python's onnx package.
//
//   node scripts/gpu-check/onnx-mlp.js OUT.onnx [width=4096] [layers=4] [fp32|fp16]
'use strict';
const fs = require('node:fs');

/** Protobuf wire encoding: varints, tags, length-delimited fields. */
function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
}
const tag = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => Buffer.concat([tag(field, 0), varint(n)]);
const bytes = (field, buf) => Buffer.concat([tag(field, 2), varint(buf.length), buf]);
const str = (field, s) => bytes(field, Buffer.from(s, 'utf8'));
const msg = (field, parts) => bytes(field, Buffer.concat(parts));

const FLOAT = 1;
const FLOAT16 = 10;

/** A seeded generator of floats in [0, 1) (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** IEEE half-precision bits of a float (round to nearest even; the weights here are small and normal). */
function toHalf(value) {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = ((bits >>> 23) & 0xff) - 127 + 15;
  let mant = bits & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - exp;
    const half = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    return sign | (half + (rest > mid || (rest === mid && half & 1) ? 1 : 0));
  }
  if (exp >= 31) return sign | 0x7c00;
  let half = sign | (exp << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half += 1;
  return half;
}

/** A [width, width] initializer of uniform weights in ±sqrt(3/width). */
function weights(name, width, fp16, next) {
  const count = width * width;
  const scale = Math.sqrt(3 / width);
  let raw;
  if (fp16) {
    const data = new Uint16Array(count);
    for (let i = 0; i < count; i++) data[i] = toHalf((next() * 2 - 1) * scale);
    raw = Buffer.from(data.buffer);
  } else {
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = (next() * 2 - 1) * scale;
    raw = Buffer.from(data.buffer);
  }
  return msg(5, [int(1, width), int(1, width), int(2, fp16 ? FLOAT16 : FLOAT), str(8, name), bytes(9, raw)]);
}

/** A value info [batch, width] of the element type. */
function valueInfo(field, name, width, elemType) {
  const shape = msg(2, [msg(1, [str(2, 'batch')]), msg(1, [int(1, width)])]);
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, elemType), shape])])]);
}

/** The model's bytes: x [batch, width] → layers × Relu(MatMul(·, W_i)) → y [batch, width]. */
function mlpModel(width = 4096, layers = 4, precision = 'fp32', seed = 1) {
  const fp16 = precision === 'fp16';
  const next = random(seed);
  const graph = [];
  for (let i = 0; i < layers; i++) {
    const input = i === 0 ? 'x' : `h${i}`;
    const output = i === layers - 1 ? 'y' : `h${i + 1}`;
    graph.push(msg(1, [str(1, input), str(1, `W${i}`), str(2, `m${i}`), str(3, `matmul${i}`), str(4, 'MatMul')]));
    graph.push(msg(1, [str(1, `m${i}`), str(2, output), str(3, `relu${i}`), str(4, 'Relu')]));
  }
  graph.push(str(2, `mlp_${width}x${layers}_${precision}`));
  for (let i = 0; i < layers; i++) graph.push(weights(`W${i}`, width, fp16, next));
  graph.push(valueInfo(11, 'x', width, fp16 ? FLOAT16 : FLOAT));
  graph.push(valueInfo(12, 'y', width, fp16 ? FLOAT16 : FLOAT));
  return Buffer.concat([int(1, 8), str(2, 'tstriton-gpu-check'), msg(7, graph), msg(8, [str(1, ''), int(2, 17)])]);
}

/** Float of IEEE half-precision bits. */
function fromHalf(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

module.exports = { mlpModel, random, toHalf, fromHalf };

if (require.main === module) {
  const [out, width = '4096', layers = '4', precision = 'fp32'] = process.argv.slice(2);
  if (!out || !['fp32', 'fp16'].includes(precision)) {
    console.error('usage: node scripts/gpu-check/onnx-mlp.js OUT.onnx [width=4096] [layers=4] [fp32|fp16]');
    process.exit(2);
  }
  fs.writeFileSync(out, mlpModel(Number(width), Number(layers), precision));
}
