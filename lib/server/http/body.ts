import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { TritonError } from '../../base/errors';
import { decodeUtf8, parseJson } from '../../tensor/lossless-json';
import type { RequestMemory } from '../../tensor/buffer-pool';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

/** Content encodings accepted on requests (and produced on responses). */
export const SUPPORTED_ENCODINGS = ['gzip', 'deflate'] as const;

/**
 * Reads a request body whatever its Content-Type, decompressing gzip or deflate, and enforces `limit`
 * on the decompressed size (and on the compressed size, which can only be smaller for honest input).
 * With `memory`, a large uncompressed body of known length is read into a buffer from the request buffer pool.
 */
export function readBody(req: IncomingMessage, limit: number, memory?: RequestMemory): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== 'deflate') {
    return Promise.reject(new TritonError('UNSUPPORTED', `Unsupported compression type '${encoding}'; supported: gzip, deflate, identity`));
  }
  if (encoding === 'identity') {
    // The common case, without an async step of its own.
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(declared, limit));
    const lease = memory && Number.isFinite(declared) ? memory.lease(declared) : undefined;
    if (lease) {
      assembled.add(lease.arrayBuffer);
      return collectInto(req, lease.bytes);
    }
    return collect(req, limit);
  }
  return decompressed(req, limit, encoding);
}

async function decompressed(req: IncomingMessage, limit: number, encoding: 'gzip' | 'deflate'): Promise<Buffer> {
  const raw = await collect(req, limit);
  try {
    return encoding === 'gzip' ? await gunzip(raw, { maxOutputLength: limit }) : await inflate(raw, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new TritonError('PAYLOAD_TOO_LARGE', `decompressed request body exceeds the maximum allowed input size of ${limit} bytes`);
    }
    throw new TritonError('INVALID_ARGUMENT', `failed to decompress the ${encoding} request body: ${(err as Error).message}`);
  }
}

/** What a body read does with each chunk (an error ends the read), and the body it makes at the end. */
interface BodySink {
  add(chunk: Buffer): TritonError | undefined;
  body(): Buffer;
}

function read(req: IncomingMessage, sink: BodySink): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    // Listeners stay until the request object goes: the error ones keep a late error from going unhandled.
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      const err = sink.add(chunk);
      if (err) {
        settled = true;
        reject(err);
      }
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(sink.body());
    });
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      reject(new TritonError('CANCELLED', `request body could not be read: ${err.message}`));
    };
    req.on('error', fail);
    req.on('aborted', () => fail(new Error('client closed the connection')));
  });
}

/** Keeps the chunks and joins them at the end (a body of one chunk is that chunk). */
function collect(req: IncomingMessage, limit: number): Promise<Buffer> {
  let first: Buffer | undefined;
  let more: Buffer[] | undefined;
  let size = 0;
  return read(req, {
    add(chunk) {
      size += chunk.length;
      if (size > limit) return tooLarge(size, limit);
      if (first === undefined) first = chunk;
      else (more ??= [first]).push(chunk);
      return undefined;
    },
    body: () => (more ? assemble(more, size) : (first ?? Buffer.alloc(0))),
  });
}

/** Reads a body of `into.length` bytes (its Content-Length, which Node's parser holds the client to) into `into`. */
function collectInto(req: IncomingMessage, into: Buffer): Promise<Buffer> {
  let size = 0;
  return read(req, {
    add(chunk) {
      if (size + chunk.length > into.length) return new TritonError('INVALID_ARGUMENT', `request body longer than its Content-Length of ${into.length} bytes`);
      size += chunk.copy(into, size);
      return undefined;
    },
    body: () => (size === into.length ? into : into.subarray(0, size)),
  });
}

/** Bodies assembled from several chunks, into memory of their own (no Node pool, nothing else in it). */
const assembled = new WeakSet<ArrayBufferLike>();

function assemble(chunks: readonly Buffer[], size: number): Buffer {
  const body = Buffer.allocUnsafeSlow(size);
  let offset = 0;
  for (const c of chunks) offset += c.copy(body, offset);
  assembled.add(body.buffer);
  return body;
}

/**
 * The memory of `body` when it holds that body alone (it was assembled here from several chunks), so the
 * request's inputs, which view it, may move to a worker thread with it instead of being copied out.
 */
export function ownMemory(body: Buffer): ArrayBufferLike | undefined {
  return assembled.has(body.buffer) ? body.buffer : undefined;
}

function tooLarge(size: number, limit: number): TritonError {
  return new TritonError('PAYLOAD_TOO_LARGE', `request body of ${size} bytes exceeds the maximum allowed input size of ${limit} bytes`);
}

/**
 * Picks the response encoding from an Accept-Encoding header: the highest q-value among gzip, deflate and
 * identity (ties go to the first listed); undefined means identity.
 */
export function negotiateEncoding(header: string | undefined): 'gzip' | 'deflate' | undefined {
  if (!header) return undefined;
  let best: string | undefined;
  let bestQ = 0;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    if (name !== 'gzip' && name !== 'deflate' && name !== 'identity') continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q=([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (q > bestQ) {
      best = name;
      bestQ = q;
    }
  }
  return best === 'gzip' || best === 'deflate' ? best : undefined;
}

/** Compresses a response body with the negotiated encoding. */
export function compress(body: Buffer, encoding: 'gzip' | 'deflate'): Promise<Buffer> {
  return encoding === 'gzip' ? promisify(zlib.gzip)(body) : promisify(zlib.deflate)(body);
}

/**
 * Reads a small JSON object body, as the extension endpoints take (an empty body is `{}`); `what` names the
 * body in the error for anything that is not an object.
 */
export async function readJsonObject(req: IncomingMessage, maxDepth: number, what: string, limit = 64 * 1024): Promise<Record<string, unknown>> {
  const text = decodeUtf8(await readBody(req, limit)).trim();
  const json = text === '' ? {} : parseJson(text, maxDepth);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new TritonError('INVALID_ARGUMENT', `${what} must be a JSON object`);
  return json as Record<string, unknown>;
}
