import { isMarkedAsUntransferable } from 'node:worker_threads';
import type { Cancellation } from '../../base/cancellation';
import type { InferenceRequest, InferenceResponse } from '../../model/inference';
import type { NamedTensor } from '../../model/inference';
import { DTYPES } from '../../tensor/dtype';
import type { Protocol } from '../infer-entry';
import type { PackedError } from './packed-error';

/** Header or metadata values a front-end thread sends with a request: the forwarded ones and trace context. */
export type PackedHeaders = Readonly<Record<string, string | string[] | Buffer | undefined>>;

/** An inference request as it crosses from a front-end thread to the core thread: decoded, without its cancellation. */
export type PackedRequest = Omit<InferenceRequest, 'cancellation' | 'memory'>;

/** One request a front-end thread hands to the core: as it arrives there, or (`R`) as the transport made it. */
export interface InferItem<R = PackedRequest> {
  readonly id: number;
  readonly modelName: string;
  readonly modelVersion: string | undefined;
  readonly protocol: Protocol | undefined;
  readonly unaryEndpoint: string | undefined;
  readonly headers: PackedHeaders | undefined;
  readonly request: R;
}

/** A response, or the error that ends a request, on its way back to the front-end thread (`R`: as the core made it). */
export type ResultItem<R = PackedResponse> =
  | { readonly id: number; readonly response: R; readonly final: boolean }
  | { readonly id: number; readonly error: PackedError };

export type PackedResponse = Omit<InferenceResponse, 'span'>;

/**
 * A turn's requests or responses (hand-off.ts): the end of the records the sender wrote into their ring, alone, or
 * with the items that cross as structured clones; `bytes` holds the records of a turn the ring had no room for.
 */
export type HandOff<P> = number | { readonly t?: undefined; readonly end?: number; readonly bytes?: ArrayBuffer; readonly extras?: readonly P[] };

/** What a front-end thread posts to the core thread. */
export type FromFrontEnd =
  | HandOff<InferItem>
  | { readonly t: 'listening'; readonly ports: Ports }
  | { readonly t: 'failed'; readonly error: PackedError }
  /** The client went away: the request's cancellation fires in the core. */
  | { readonly t: 'cancel'; readonly id: number }
  /** A response that was not the last one has been written (a decoupled stream's flow control). */
  | { readonly t: 'taken'; readonly id: number }
  /** A question or a command for the core, answered with `called` (front-ends.ts `CoreCalls`). */
  | { readonly t: 'call'; readonly id: number; readonly method: CoreMethod; readonly args: readonly unknown[] }
  | { readonly t: 'done'; readonly phase: Phase };

/** What the core thread posts to a front-end thread. */
export type ToFrontEnd =
  | HandOff<ResultItem>
  | { readonly t: 'listen'; readonly ports: Ports; readonly reusePort: boolean }
  | { readonly t: 'called'; readonly id: number; readonly value?: unknown; readonly error?: PackedError }
  | { readonly t: 'phase'; readonly phase: Phase };

/** What a front-end thread asks the core thread to run for it, and answers once the core has answered. */
export type CoreMethod =
  | 'modelStatistics'
  | 'repositoryIndex'
  | 'traceSettings'
  | 'logSettings'
  | 'chatPrompt'
  | 'loadModel'
  | 'unloadModel'
  | 'shmRegister'
  | 'shmUnregister';

/** The ports a front-end thread serves (undefined: that transport is off). */
export interface Ports {
  readonly http?: number;
  readonly grpc?: number;
  /** The OpenAI API's own port (`openaiPort`), when it has one. */
  readonly openai?: number;
}

/** The steps of a stop, as `Transport` names them. */
export type Phase = 'drain' | 'stopAccepting' | 'forceClose';

/**
 * The bytes that leave with one message: buffers moved whole (a request's own body), and small tensors copied
 * together into shared chunks (sized by what the previous message needed), so that a message of many small requests or responses moves a few buffers rather
 * than one per tensor. A tensor view in the message is a view on one of them.
 */
export class Staging {
  private readonly moved = new Set<ArrayBuffer>();
  private chunk: ArrayBuffer | undefined;
  private used = 0;
  /** Bytes staged for this message so far, and the size of the next message's first chunk (what the last one took). */
  private staged = 0;
  private chunkBytes = MIN_CHUNK_BYTES;

  /** Whether `buffer` moves with this message already. */
  moves(buffer: ArrayBufferLike): boolean {
    return this.moved.has(buffer as ArrayBuffer);
  }

  /** Moves `buffer` whole with the message. */
  move(buffer: ArrayBuffer): void {
    this.moved.add(buffer);
  }

  /** A copy of `view`'s own bytes, of its type, in a buffer that moves with the message. */
  copy(view: Bytes): Bytes {
    const n = view.byteLength;
    const Ctor = view.constructor as ViewConstructor;
    const size = (Ctor as unknown as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
    if (n > STAGED_MAX_BYTES) {
      const own = copyOf(view);
      this.moved.add(own.buffer as ArrayBuffer);
      return own;
    }
    let at = (this.used + 7) & ~7;
    if (this.chunk === undefined || at + n > this.chunk.byteLength) {
      // Sized by what the last message staged, so that a steady stream allocates about one small chunk per message.
      this.chunk = new ArrayBuffer(Math.max(this.chunkBytes, n));
      this.moved.add(this.chunk);
      at = 0;
    }
    new Uint8Array(this.chunk, at, n).set(new Uint8Array(view.buffer, view.byteOffset, n));
    this.used = at + n;
    this.staged += n + 8;
    return new Ctor(this.chunk, at, n / size);
  }

  /** The buffers to transfer with the message; the next message starts afresh. */
  take(): ArrayBuffer[] {
    const out = [...this.moved];
    this.moved.clear();
    this.chunk = undefined;
    this.used = 0;
    if (this.staged > 0) this.chunkBytes = Math.min(MAX_CHUNK_BYTES, Math.max(MIN_CHUNK_BYTES, Math.ceil(this.staged * 1.25)));
    this.staged = 0;
    return out;
  }
}

/** Tensors up to this size share a chunk; larger ones get a buffer of their own. */
const STAGED_MAX_BYTES = 16 * 1024;
/** The bounds of a chunk's size. */
const MIN_CHUNK_BYTES = 256;
const MAX_CHUNK_BYTES = 64 * 1024;

/**
 * The request without what stays on its thread (its cancellation, its pooled memory), its tensors' bytes moved
 * rather than copied where they are the request's own: the body the transport assembled for it (`movableBuffer`),
 * or a buffer no one else can hold. A tensor that is a window on a buffer shared with others is copied out (into
 * `staging`), so that the message carries its bytes and not the whole buffer.
 */
export function packRequest(request: InferenceRequest, staging: Staging): PackedRequest {
  const { cancellation: _c, memory: _m, movableBuffer, ...rest } = request;
  // A small body goes the way of small tensors, into a shared chunk.
  const movable = movableBuffer !== undefined && request.memory === undefined && movableBuffer.byteLength > STAGED_MAX_BYTES && canMove(movableBuffer);
  if (movable) staging.move(movableBuffer as ArrayBuffer);
  const inputs = request.inputs.map((input) => moveTensor(input, staging));
  return { ...rest, inputs, movableBuffer: movable ? movableBuffer : undefined };
}

/**
 * The request as the core thread runs it. Node makes a message's typed arrays in its main context; under a vm
 * context (jest) they then fail `instanceof Float32Array`, which validation relies on (a callable's
 * `x.data.map(...)` would make an output of the wrong realm). Each tensor's data is then viewed with this
 * context's constructors: no copy, and the same arrays outside such contexts.
 */
export function unpackRequest(packed: PackedRequest, cancellation: Cancellation): InferenceRequest {
  // The message's objects are this thread's alone: they become the request in place.
  for (const named of packed.inputs) {
    const tensor = named.tensor as { dtype: NamedTensor['tensor']['dtype']; data: unknown };
    tensor.data = inThisRealm(DTYPES[tensor.dtype].array as unknown as ViewConstructor | null, tensor.data as Bytes | Bytes[]);
  }
  const request = packed as { -readonly [K in keyof InferenceRequest]: InferenceRequest[K] };
  request.cancellation = cancellation;
  return request;
}

type ViewConstructor = new (buffer: ArrayBufferLike, offset: number, length: number) => Bytes;

/** `data` (a typed array, or BYTES' array of Uint8Array when `array` is null) as this context's typed arrays. */
function inThisRealm(array: ViewConstructor | null, data: Bytes | Bytes[]): Bytes | Bytes[] {
  const view = (Ctor: ViewConstructor, v: Bytes): Bytes =>
    v instanceof Ctor ? v : new Ctor(v.buffer, v.byteOffset, v.byteLength / ((Ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT ?? 1));
  if (array === null) {
    const elements = data as Bytes[];
    return elements.every((e) => e instanceof Uint8Array) ? elements : elements.map((e) => view(Uint8Array as unknown as ViewConstructor, e));
  }
  return view(array, data as Bytes);
}

/** A response's outputs, each tensor's bytes copied (into `staging`) out of buffers the core may still use (a batch, the cache). */
export function packResponse(response: InferenceResponse, staging: Staging): PackedResponse {
  const { span: _s, ...rest } = response;
  const outputs = response.outputs.map((output) => copyTensor(output, staging));
  return { ...rest, outputs };
}

/** Whether `buffer` can be moved to another thread (not Node's shared pool of small buffers, not shared). */
function canMove(buffer: ArrayBufferLike): boolean {
  return buffer instanceof ArrayBuffer && !isMarkedAsUntransferable(buffer) && buffer.byteLength > 0;
}

type Bytes = ArrayBufferView & { readonly buffer: ArrayBufferLike };

/** A copy of a typed array's own elements (a Buffer's `slice` would be a view, so the typed arrays' own is used). */
const sliceOf = Object.getPrototypeOf(Uint8Array.prototype as object) as { slice: (this: Bytes) => Bytes };
const copyOf = (view: Bytes): Bytes => sliceOf.slice.call(view);

function moveTensor(named: NamedTensor, staging: Staging): NamedTensor {
  const { data } = named.tensor;
  const move = (view: Bytes): Bytes => {
    if (staging.moves(view.buffer)) return view;
    // A view on the whole of a buffer that no one else can reach moves as it is; any other is copied out.
    if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength && view.byteLength > STAGED_MAX_BYTES && canMove(view.buffer)) {
      staging.move(view.buffer as ArrayBuffer);
      return view;
    }
    return staging.copy(view);
  };
  const moved = Array.isArray(data) ? (data as Bytes[]).map(move) : move(data as unknown as Bytes);
  return { name: named.name, tensor: { ...named.tensor, data: moved as never } };
}

function copyTensor(named: NamedTensor, staging: Staging): NamedTensor {
  const { data } = named.tensor;
  const copied = Array.isArray(data) ? (data as Bytes[]).map((v) => staging.copy(v)) : staging.copy(data as unknown as Bytes);
  return { ...named, tensor: { ...named.tensor, data: copied as never } };
}
