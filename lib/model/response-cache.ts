import { createHash, type Hash } from 'node:crypto';
import type { ParameterValue } from '../callable/callable';
import type { TensorData } from '../tensor/dtype';
import type { Tensor } from '../tensor/tensor';
import type { NamedTensor } from './inference';

/** Bytes an entry is charged beyond its tensor data: its key, and the bookkeeping per output. */
const ENTRY_OVERHEAD_BYTES = 64;
const OUTPUT_OVERHEAD_BYTES = 64;

interface Entry {
  readonly outputs: readonly NamedTensor[];
  readonly bytes: number;
}

/**
 * The server's response cache, shared by every model that enables it (Triton's `local` cache): responses
 * by a hash of the request, least recently used first out once the cache holds `capacityBytes`.
 *
 * Entries own their memory: outputs are copied in (so a cached view does not pin a whole batch's buffer)
 * and copied out (so a caller that writes to its response cannot change what the next one gets).
 */
export class ResponseCache {
  /** Map order is recency order: a hit moves its entry to the end, eviction takes from the front. */
  private readonly entries = new Map<string, Entry>();
  private used = 0;
  lookups = 0;
  hits = 0;
  misses = 0;
  insertions = 0;
  evictions = 0;

  constructor(readonly capacityBytes: number) {}

  get entryCount(): number {
    return this.entries.size;
  }

  get usedBytes(): number {
    return this.used;
  }

  /** Share of the capacity in use, 0 to 1. */
  get utilization(): number {
    return this.capacityBytes > 0 ? this.used / this.capacityBytes : 0;
  }

  /**
   * The key of a request: the model and version, every input (name, dtype, shape and bytes, in name order),
   * the outputs asked for (in their order: responses keep it) and the request parameters. Anything that can
   * change the response changes the key.
   */
  static keyOf(
    model: string,
    version: string,
    inputs: Readonly<Record<string, Tensor>>,
    requestedOutputs: readonly string[],
    parameters: Readonly<Record<string, ParameterValue>>,
  ): string {
    const h = createHash('sha256');
    field(h, model);
    field(h, version);
    const names = Object.keys(inputs).sort();
    field(h, String(names.length));
    for (const name of names) {
      const t = inputs[name] as Tensor;
      field(h, name);
      field(h, t.dtype);
      field(h, t.shape.join(','));
      hashData(h, t.data);
    }
    field(h, requestedOutputs.join('\u0000'));
    const keys = Object.keys(parameters).sort();
    field(h, String(keys.length));
    for (const k of keys) {
      const v = parameters[k] as ParameterValue;
      field(h, k);
      field(h, `${typeof v}:${String(v)}`);
    }
    return h.digest('base64');
  }

  /** The cached outputs for `key` (copies), or undefined; counts a lookup and a hit or a miss. */
  lookup(key: string): NamedTensor[] | undefined {
    this.lookups++;
    const entry = this.entries.get(key);
    if (!entry) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.outputs.map(copyNamed);
  }

  /**
   * Stores copies of `outputs` under `key`, evicting the least recently used entries to make room. A response
   * larger than the whole cache is not stored; returns whether it was.
   */
  insert(key: string, outputs: readonly NamedTensor[]): boolean {
    let bytes = ENTRY_OVERHEAD_BYTES + key.length;
    for (const o of outputs) bytes += OUTPUT_OVERHEAD_BYTES + o.name.length + dataBytes(o.tensor.data);
    if (bytes > this.capacityBytes) return false;
    const previous = this.entries.get(key);
    if (previous) {
      // Two misses of the same request raced; keep one entry.
      this.entries.delete(key);
      this.used -= previous.bytes;
    }
    for (const [oldest, entry] of this.entries) {
      if (this.used + bytes <= this.capacityBytes) break;
      this.entries.delete(oldest);
      this.used -= entry.bytes;
      this.evictions++;
    }
    this.entries.set(key, { outputs: outputs.map(copyNamed), bytes });
    this.used += bytes;
    this.insertions++;
    return true;
  }
}

/** Length-prefixed, so that no two field lists hash the same bytes. */
function field(h: Hash, s: string): void {
  h.update(`${s.length}:${s};`);
}

function hashData(h: Hash, data: TensorData): void {
  if (Array.isArray(data)) {
    field(h, String(data.length));
    for (const e of data) {
      field(h, String(e.byteLength));
      h.update(e);
    }
    return;
  }
  const view = data as ArrayBufferView;
  field(h, String(view.byteLength));
  h.update(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
}

function dataBytes(data: TensorData): number {
  if (!Array.isArray(data)) return (data as ArrayBufferView).byteLength;
  let n = 0;
  for (const e of data) n += 4 + e.byteLength;
  return n;
}

/** %TypedArray%.prototype.slice: always a copy (Buffer's own `slice` returns a view). */
const typedSlice = (Object.getPrototypeOf(Uint8Array.prototype) as { slice: (this: ArrayBufferView) => ArrayBufferView }).slice;

function copyNamed(o: NamedTensor): NamedTensor {
  const t = o.tensor;
  const data = Array.isArray(t.data) ? t.data.map((e) => typedSlice.call(e) as Uint8Array) : typedSlice.call(t.data as ArrayBufferView);
  return { name: o.name, tensor: { dtype: t.dtype, shape: [...t.shape], data: data as TensorData } };
}
