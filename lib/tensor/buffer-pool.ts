/** Messages smaller than this are not pooled: their allocations cost the garbage collector little. */
export const POOLED_MESSAGE_BYTES = 1024 * 1024;

/**
 * Memory for large request messages (gRPC ModelInfer, HTTP bodies with binary tensors) and the batches made of
 * them, kept between requests.
 *
 * A 4 MB tensor received into a new buffer is 4 MB of external memory for V8, which counts it towards its next
 * full garbage collection; the buffer lives until the response is written, long enough to be promoted, so only
 * a full collection frees it. At tens of such requests a second that is a full collection every few requests,
 * each marking the whole heap. A buffer taken from here and given back when its request is done allocates
 * nothing.
 *
 * A lease's memory comes in an ArrayBuffer of its own; when the lease goes back, the memory moves out of it (a
 * transfer, no copy) and back here, which leaves that ArrayBuffer, and every view of it, empty. So a request's
 * input tensors must not be used after its response is sent: they read as empty, and no later request's data
 * shows through them. Memory moved to a worker thread (the ArrayBuffer is already empty) is not returned.
 *
 * Buffers come in power-of-two sizes from `POOLED_MESSAGE_BYTES`; at most `capacity` bytes are kept free.
 * A batch is a few messages' size, so a free buffer may serve a request up to four times smaller.
 */
export class BufferPool {
  /** Free buffers, the least recently returned first. */
  private readonly free: ArrayBuffer[] = [];
  private freeBytes = 0;

  constructor(readonly capacity: number) {}

  /**
   * A buffer of `size` bytes, or undefined when messages of this size are not pooled: the smallest free one that
   * fits without wasting more than three quarters of it, else a new one.
   */
  lease(size: number): BufferLease | undefined {
    if (size < POOLED_MESSAGE_BYTES) return undefined;
    const bytes = sizeClass(size);
    if (bytes > this.capacity) return undefined;
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const n = (this.free[i] as ArrayBuffer).byteLength;
      if (n >= bytes && n <= 4 * bytes && (best < 0 || n < (this.free[best] as ArrayBuffer).byteLength)) best = i;
    }
    let memory: ArrayBuffer;
    if (best >= 0) {
      memory = this.free.splice(best, 1)[0] as ArrayBuffer;
      this.freeBytes -= memory.byteLength;
    } else {
      memory = Buffer.allocUnsafeSlow(bytes).buffer as ArrayBuffer;
    }
    return new BufferLease(this, memory, size);
  }

  /** Bytes kept for reuse now. */
  get pooledBytes(): number {
    return this.freeBytes;
  }

  /** @internal Takes memory back; past `capacity`, the buffers returned longest ago go. */
  restore(memory: ArrayBuffer): void {
    this.free.push(memory);
    this.freeBytes += memory.byteLength;
    while (this.freeBytes > this.capacity) this.freeBytes -= (this.free.shift() as ArrayBuffer).byteLength;
  }
}

/** One buffer from a pool; it goes back once every request holding it has let it go (see RequestMemory). */
export class BufferLease {
  /** The first `size` bytes of the leased memory. */
  readonly bytes: Buffer;
  /** Requests holding it; it goes back when the last lets go. */
  private holders = 0;
  private released = false;

  constructor(
    private readonly pool: BufferPool,
    private readonly memory: ArrayBuffer,
    size: number,
  ) {
    this.bytes = Buffer.from(memory, 0, size);
  }

  /** The ArrayBuffer behind `bytes`, a whole buffer of its own. */
  get arrayBuffer(): ArrayBuffer {
    return this.memory;
  }

  /** @internal A request holds it (RequestMemory.hold). */
  addHolder(): void {
    this.holders++;
  }

  /** @internal A request lets it go; the last one gives the memory back. */
  dropHolder(): void {
    if (--this.holders === 0) this.release();
  }

  /**
   * Returns the memory to the pool, leaving `bytes` and every other view of it empty. Once only. Memory already
   * moved elsewhere (to a worker thread) stays there.
   */
  private release(): void {
    if (this.released) return;
    this.released = true;
    if (this.memory.byteLength === 0) return;
    this.pool.restore(structuredClone(this.memory, { transfer: [this.memory] }));
  }
}

/** The key under which a server request carries its RequestMemory (`concatBatch` reads it). */
export const REQUEST_MEMORY: unique symbol = Symbol('tstriton.requestMemory');

/**
 * The pooled memory one request's tensors live in: the message it arrived in and any batch its inputs were
 * copied into. The transport calls `release()` once the request's response is written, and only then: after an
 * error the memory is left to the garbage collector, since work on the request may still be running.
 */
export class RequestMemory {
  private readonly leases: BufferLease[] = [];
  private released = false;

  constructor(readonly pool: BufferPool) {}

  /** A buffer of `size` bytes held by this request, or undefined when buffers of this size are not pooled. */
  lease(size: number): BufferLease | undefined {
    const lease = this.pool.lease(size);
    if (lease) this.hold(lease);
    return lease;
  }

  /** True while the request holds pooled buffers (a small request usually holds none). */
  get holding(): boolean {
    return this.leases.length > 0;
  }

  /** Holds `lease` until this request is released. */
  hold(lease: BufferLease): void {
    lease.addHolder();
    this.leases.push(lease);
  }

  /** The response is written: this request lets go of its buffers. Once only. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const lease of this.leases) lease.dropHolder();
    this.leases.length = 0;
  }
}

/**
 * A buffer of `size` bytes held by every one of `requests`, when they all carry memory from one pool and the size
 * is pooled: where a batch of their inputs can be copied.
 */
export function batchMemory(requests: readonly object[], size: number): ArrayBuffer | undefined {
  const first = (requests[0] as { [REQUEST_MEMORY]?: RequestMemory } | undefined)?.[REQUEST_MEMORY];
  if (!first) return undefined;
  for (const r of requests) if ((r as { [REQUEST_MEMORY]?: RequestMemory })[REQUEST_MEMORY]?.pool !== first.pool) return undefined;
  const lease = first.pool.lease(size);
  if (!lease) return undefined;
  for (const r of requests) (r as { [REQUEST_MEMORY]: RequestMemory })[REQUEST_MEMORY].hold(lease);
  return lease.arrayBuffer;
}

/** The power of two at or above `size`. */
function sizeClass(size: number): number {
  return 2 ** Math.ceil(Math.log2(size));
}
