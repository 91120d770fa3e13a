/**
 * The frame of the bare node:http KServe v2 servers our server is measured against: it does the minimum a
 * correct server must do around the model (read the body, honour Inference-Header-Content-Length, parse the
 * JSON header, answer in JSON or in the binary tensor format) and nothing else: no validation, routing,
 * scheduling or error table.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildHandle } from './child';

/** A request as the bare server read it. */
export interface BareRequest<H> {
  /** The parsed JSON header. */
  header: H;
  body: Buffer;
  /** Where the binary section starts in `body` (its length when there is none). */
  headLength: number;
}

/** An answer: the JSON header, and the binary section when there is one (its length then in the header's outputs). */
export interface BareAnswer {
  header: Record<string, unknown>;
  binary?: Uint8Array;
}

/** The bytes `size` long at `offset` of the body as FP32 values (copied when they are not 4-byte aligned). */
export function fp32At(body: Buffer, offset: number, size: number): Float32Array {
  const bytes = body.subarray(offset, offset + size);
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : Buffer.from(bytes);
  return new Float32Array(aligned.buffer, aligned.byteOffset, size / 4);
}

function respond(res: http.ServerResponse, answer: BareAnswer): void {
  const head = Buffer.from(JSON.stringify(answer.header), 'utf8');
  if (!answer.binary) {
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': head.length });
    res.end(head);
    return;
  }
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Inference-Header-Content-Length': head.length,
    'Content-Length': head.length + answer.binary.byteLength,
  });
  res.cork();
  res.write(head);
  res.end(answer.binary);
}

function reject(res: http.ServerResponse, err: unknown): void {
  const text = JSON.stringify({ error: (err as Error).message });
  res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Serves `answer` on 127.0.0.1 (a free port) for a benchmark child. A synchronous `answer` is answered in the
 * same turn; `release` runs after the server has closed.
 */
export function serveBareKserve<H>(answer: (req: BareRequest<H>) => BareAnswer | Promise<BareAnswer>, release?: () => Promise<void>): Promise<ChildHandle> {
  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        const ihcl = req.headers['inference-header-content-length'];
        const headLength = ihcl === undefined ? body.length : Number(ihcl);
        const header = JSON.parse(body.toString('utf8', 0, headLength)) as H;
        const a = answer({ header, body, headLength });
        if (a instanceof Promise) a.then((x) => respond(res, x), (err: unknown) => reject(res, err));
        else respond(res, a);
      } catch (err) {
        reject(res, err);
      }
    });
  };
  return new Promise((resolve, fail) => {
    const server = http.createServer({ noDelay: true }, handle);
    server.keepAliveTimeout = 65_000;
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        stop: () =>
          new Promise<void>((done) => {
            server.close(() => void (release ? release().finally(done) : done()));
            server.closeAllConnections();
          }),
      }),
    );
  });
}
