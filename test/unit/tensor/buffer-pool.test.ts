import { BufferPool, POOLED_MESSAGE_BYTES, REQUEST_MEMORY, RequestMemory } from '../../../lib/tensor/buffer-pool';
import { concatBatch, tensor } from '../../../lib/tensor/tensor';

const MiB = 1024 * 1024;

describe('BufferPool', () => {
  it('pools messages of 1 MiB or more that fit its capacity, in power-of-two buffers', () => {
    const pool = new BufferPool(8 * MiB);
    expect(pool.lease(POOLED_MESSAGE_BYTES - 1)).toBeUndefined();
    expect(pool.lease(8 * MiB + 1)).toBeUndefined();
    const lease = pool.lease(3 * MiB + 5);
    expect(lease?.bytes.length).toBe(3 * MiB + 5);
    expect(lease?.arrayBuffer.byteLength).toBe(4 * MiB);
    expect(new BufferPool(0).lease(2 * MiB)).toBeUndefined();
  });

  it('gives a released buffer to the next request and empties every view of it', () => {
    const pool = new BufferPool(16 * MiB);
    const first = new RequestMemory(pool);
    const lease = first.lease(2 * MiB)!;
    lease.bytes[7] = 42;
    const kept = new Float32Array(lease.arrayBuffer, 0, 16);
    first.release();
    expect(pool.pooledBytes).toBe(2 * MiB);
    expect(kept.length).toBe(0);
    expect(lease.bytes.length).toBe(0);
    // The same memory, moved: the byte written through the first lease is still there.
    const second = new RequestMemory(pool).lease(2 * MiB)!;
    expect(pool.pooledBytes).toBe(0);
    expect(second.bytes[7]).toBe(42);
  });

  it('releases a request once, and takes back nothing a request still holds', () => {
    const pool = new BufferPool(16 * MiB);
    const a = new RequestMemory(pool);
    const b = new RequestMemory(pool);
    expect(a.holding).toBe(false);
    expect(a.lease(POOLED_MESSAGE_BYTES - 1)).toBeUndefined();
    expect(a.holding).toBe(false);
    const shared = a.lease(4 * MiB)!;
    b.hold(shared);
    expect([a.holding, b.holding]).toEqual([true, true]);
    a.release();
    a.release();
    expect(pool.pooledBytes).toBe(0);
    expect(shared.bytes.length).toBe(4 * MiB);
    b.release();
    expect(pool.pooledBytes).toBe(4 * MiB);
    expect([a.holding, b.holding]).toEqual([false, false]);
  });

  it('does not take back memory that moved to another thread', () => {
    const pool = new BufferPool(16 * MiB);
    const memory = new RequestMemory(pool);
    const lease = memory.lease(2 * MiB)!;
    structuredClone(lease.arrayBuffer, { transfer: [lease.arrayBuffer] });
    memory.release();
    expect(pool.pooledBytes).toBe(0);
  });

  it('keeps at most its capacity free, dropping the buffers returned longest ago', () => {
    const pool = new BufferPool(6 * MiB);
    const requests = [2, 4, 2].map(() => new RequestMemory(pool));
    const leases = requests.map((r, i) => r.lease([2, 4, 2][i]! * MiB)!);
    requests.forEach((r) => r.release());
    // 2 + 4 fit; the last 2 MiB pushes the first out.
    expect(pool.pooledBytes).toBe(6 * MiB);
    expect(leases.every((l) => l.bytes.length === 0)).toBe(true);
    const next = new RequestMemory(pool);
    next.lease(4 * MiB);
    next.lease(2 * MiB);
    expect(pool.pooledBytes).toBe(0);
  });

  it('serves a request from a free buffer up to four times its size, not larger', () => {
    const pool = new BufferPool(64 * MiB);
    const big = new RequestMemory(pool);
    big.lease(16 * MiB);
    big.release();
    expect(new RequestMemory(pool).lease(2 * MiB)?.arrayBuffer.byteLength).toBe(2 * MiB);
    expect(pool.pooledBytes).toBe(16 * MiB);
    expect(new RequestMemory(pool).lease(4 * MiB)?.arrayBuffer.byteLength).toBe(16 * MiB);
    expect(pool.pooledBytes).toBe(0);
  });
});

describe('concatBatch with server requests', () => {
  const part = (n: number, v: number) => tensor('FP32', [1, n], new Float32Array(n).fill(v));

  it('copies a large batch into pooled memory that every request of the batch holds', () => {
    const pool = new BufferPool(64 * MiB);
    const requests = [new RequestMemory(pool), new RequestMemory(pool)].map((m) => ({ [REQUEST_MEMORY]: m }));
    const n = 256 * 1024; // 1 MiB of FP32 per request
    const joined = concatBatch([part(n, 1), part(n, 2)], requests);
    expect(joined.shape).toEqual([2, n]);
    const data = joined.data as Float32Array;
    expect(data.buffer.byteLength).toBe(2 * MiB);
    expect([data[0], data[n - 1], data[n], data[2 * n - 1]]).toEqual([1, 1, 2, 2]);
    requests[0]![REQUEST_MEMORY].release();
    expect(data.length).toBe(2 * n);
    requests[1]![REQUEST_MEMORY].release();
    expect(data.length).toBe(0);
    expect(pool.pooledBytes).toBe(2 * MiB);
  });

  it('allocates as before when a request has no pooled memory or the batch is small', () => {
    const pool = new BufferPool(64 * MiB);
    const n = 256 * 1024;
    const mixed = concatBatch([part(n, 1), part(n, 2)], [{ [REQUEST_MEMORY]: new RequestMemory(pool) }, {}]);
    const small = concatBatch([part(4, 1), part(4, 2)], [{ [REQUEST_MEMORY]: new RequestMemory(pool) }, { [REQUEST_MEMORY]: new RequestMemory(pool) }]);
    expect((mixed.data as Float32Array).buffer.byteLength).toBe(2 * n * 4);
    expect(Array.from(small.data as Float32Array)).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
    expect(pool.pooledBytes).toBe(0);
  });
});
