import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestInputs, type ModelInputs } from '../../../lib/perf/perf-inputs';

// `--input-data DIR`: perf_analyzer's data directory, one file per input named as the input: the raw elements of a
// numeric input, one line per element of a BYTES input.

const MODEL: ModelInputs = {
  maxBatchSize: 8,
  sequence: false,
  decoupled: false,
  inputs: [
    { name: 'x', datatype: 'FP32', shape: [3], optional: false },
    { name: 'text', datatype: 'BYTES', shape: [2], optional: false },
    { name: 'mask', datatype: 'INT32', shape: [3], optional: true },
  ],
  outputs: [{ name: 'y', datatype: 'FP32', shape: [3] }],
};

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tstriton-perf-data-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const raw = (values: Float32Array | Int32Array) => Buffer.from(values.buffer, values.byteOffset, values.byteLength);

describe('--input-data DIR', () => {
  it('reads one sample from the files, stacked to the batch; an optional input without a file is left out', () => {
    writeFileSync(join(dir, 'x'), raw(new Float32Array([1.5, 2.5, 3.5])));
    writeFileSync(join(dir, 'text'), 'hello\nworld\n');
    const [request, ...others] = requestInputs(MODEL, 2, { file: dir });
    expect(others).toEqual([]);
    expect(request?.map((t) => t.name)).toEqual(['x', 'text']);
    expect(request?.[0]?.tensor).toEqual({ dtype: 'FP32', shape: [2, 3], data: new Float32Array([1.5, 2.5, 3.5, 1.5, 2.5, 3.5]) });
    const text = request?.[1]?.tensor;
    expect(text?.shape).toEqual([2, 2]);
    expect((text?.data as Uint8Array[]).map((b) => Buffer.from(b).toString())).toEqual(['hello', 'world', 'hello', 'world']);
  });

  it('sends an optional input whose file is there', () => {
    writeFileSync(join(dir, 'x'), raw(new Float32Array(3)));
    writeFileSync(join(dir, 'text'), 'a\nb');
    writeFileSync(join(dir, 'mask'), raw(new Int32Array([1, 0, 1])));
    const [request] = requestInputs(MODEL, 1, { file: dir });
    expect(request?.find((t) => t.name === 'mask')?.tensor).toEqual({ dtype: 'INT32', shape: [1, 3], data: new Int32Array([1, 0, 1]) });
  });

  it('names the input, the file and what the shape needs when a file is missing or does not fit', () => {
    writeFileSync(join(dir, 'text'), 'a\nb\n');
    expect(() => requestInputs(MODEL, 1, { file: dir })).toThrow(`--input-data ${dir}: x: no file for input 'x'`);
    writeFileSync(join(dir, 'x'), raw(new Float32Array(2)));
    expect(() => requestInputs(MODEL, 1, { file: dir })).toThrow(`--input-data ${dir}: x: the file has 8 bytes; shape [3] of FP32 needs 12`);
    writeFileSync(join(dir, 'x'), raw(new Float32Array(3)));
    writeFileSync(join(dir, 'text'), 'a\nb\nc\n');
    expect(() => requestInputs(MODEL, 1, { file: dir })).toThrow(`--input-data ${dir}: text: the file has 3 lines; shape [2] needs 2 (one element a line)`);
  });
});
