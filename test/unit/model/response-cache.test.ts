import { ResponseCache } from '../../../lib/model/response-cache';
import type { NamedTensor } from '../../../lib/model/inference';
import { tensor, type Tensor } from '../../../lib';

const x = (values: number[], shape = [1, values.length]): Record<string, Tensor> => ({ x: tensor('FP32', shape, new Float32Array(values)) });
const key = (inputs: Record<string, Tensor>, outputs: string[] = ['y'], parameters: Record<string, string | number | boolean | bigint> = {}, model = 'm', version = '1') =>
  ResponseCache.keyOf(model, version, inputs, outputs, parameters);
const out = (bytes: number, name = 'y'): NamedTensor[] => [{ name, tensor: tensor('UINT8', [1, bytes], new Uint8Array(bytes).fill(7)) }];

describe('ResponseCache.keyOf', () => {
  it('is the same for the same request, whatever the order of its inputs or parameters', () => {
    const a = { a: tensor('INT32', [1, 2], new Int32Array([1, 2])), b: tensor('FP32', [1, 1], new Float32Array([3])) };
    const b = { b: tensor('FP32', [1, 1], new Float32Array([3])), a: tensor('INT32', [1, 2], new Int32Array([1, 2])) };
    expect(key(a, ['y'], { p: 1, q: 'z' })).toBe(key(b, ['y'], { q: 'z', p: 1 }));
  });

  it('changes with anything that can change the response', () => {
    const base = key(x([1, 2]));
    const variants = [
      key(x([1, 3])), // data
      key(x([1, 2], [2, 1])), // shape
      key({ x: tensor('INT32', [1, 2], new Int32Array(new Float32Array([1, 2]).buffer)) }), // dtype, same bytes
      key(x([1, 2]), ['z']), // requested outputs
      key(x([1, 2]), ['y', 'z']),
      key(x([1, 2]), ['y'], { p: 1 }), // parameters
      key(x([1, 2]), ['y'], { p: '1' }), // parameter type
      key(x([1, 2]), ['y'], {}, 'other'), // model
      key(x([1, 2]), ['y'], {}, 'm', '2'), // version
      key({ y: x([1, 2]).x! }), // input name
    ];
    for (const v of variants) expect(v).not.toBe(base);
    expect(new Set(variants).size).toBe(variants.length);
  });

  it('reads only the bytes of a view, and tells BYTES elements apart by their boundaries', () => {
    const whole = new Float32Array([9, 1, 2, 9]);
    expect(key({ x: tensor('FP32', [1, 2], whole.subarray(1, 3)) })).toBe(key(x([1, 2])));
    const bytes = (...es: string[]) => ({ s: tensor('BYTES', [1, es.length], es.map((e) => Buffer.from(e))) });
    expect(key(bytes('ab', 'c'))).not.toBe(key(bytes('a', 'bc')));
    expect(key(bytes('ab', 'c'))).toBe(key(bytes('ab', 'c')));
  });
});

describe('ResponseCache', () => {
  it('answers a stored response with copies, and counts lookups, hits and misses', () => {
    const cache = new ResponseCache(1 << 20);
    expect(cache.lookup('k')).toBeUndefined();
    const stored = [{ name: 'y', tensor: tensor('FP32', [1, 2], new Float32Array([1, 2])) }];
    expect(cache.insert('k', stored)).toBe(true);
    (stored[0]!.tensor.data as Float32Array)[0] = 100; // the caller's array is not the cache's
    const first = cache.lookup('k')!;
    expect(Array.from(first[0]!.tensor.data as Float32Array)).toEqual([1, 2]);
    (first[0]!.tensor.data as Float32Array)[1] = 200; // nor is what a hit hands out
    expect(Array.from(cache.lookup('k')![0]!.tensor.data as Float32Array)).toEqual([1, 2]);
    expect([cache.lookups, cache.hits, cache.misses, cache.insertions, cache.entryCount]).toEqual([3, 2, 1, 1, 1]);
  });

  it('copies a view out of a larger buffer, so an entry does not keep the whole buffer', () => {
    const cache = new ResponseCache(1 << 20);
    const batchOutput = new Uint8Array(1 << 16);
    cache.insert('k', [{ name: 'y', tensor: tensor('UINT8', [1, 4], batchOutput.subarray(8, 12)) }]);
    const hit = cache.lookup('k')![0]!.tensor.data as Uint8Array;
    expect(hit.byteLength).toBe(4);
    expect(hit.buffer.byteLength).toBe(4);
    expect(cache.usedBytes).toBeLessThan(1024);
  });

  it('copies BYTES elements and Buffers', () => {
    const cache = new ResponseCache(1 << 20);
    const element = Buffer.from('hello');
    cache.insert('k', [{ name: 's', tensor: tensor('BYTES', [1, 1], [element]) }]);
    element.write('J');
    const hit = cache.lookup('k')![0]!.tensor.data as Uint8Array[];
    expect(Buffer.from(hit[0]!).toString()).toBe('hello');
  });

  it('evicts the least recently used entries to stay within its size, and skips a response larger than the cache', () => {
    const cache = new ResponseCache(1000);
    expect(cache.insert('a', out(300))).toBe(true);
    expect(cache.insert('b', out(300))).toBe(true);
    expect(cache.lookup('a')).toBeDefined(); // a is now the most recent
    expect(cache.insert('c', out(300))).toBe(true); // evicts b
    expect(cache.lookup('b')).toBeUndefined();
    expect(cache.lookup('a')).toBeDefined();
    expect(cache.lookup('c')).toBeDefined();
    expect(cache.evictions).toBe(1);
    expect(cache.usedBytes).toBeLessThanOrEqual(1000);
    expect(cache.utilization).toBeCloseTo(cache.usedBytes / 1000);

    expect(cache.insert('huge', out(2000))).toBe(false);
    expect(cache.lookup('huge')).toBeUndefined();
    expect(cache.entryCount).toBe(2);
  });

  it('keeps one entry when the same key is stored twice', () => {
    const cache = new ResponseCache(10_000);
    cache.insert('a', out(100));
    const used = cache.usedBytes;
    cache.insert('a', out(100));
    expect(cache.entryCount).toBe(1);
    expect(cache.usedBytes).toBe(used);
  });
});
