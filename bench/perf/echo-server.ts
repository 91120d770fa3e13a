/**
 * A bare KServe v2 server over raw TCP, for measuring how fast `tstriton perf` itself can go: it reads HTTP/1.1
 * requests (head, Content-Length body) and answers each with bytes built once: ready, the metadata and config of
 * one model `echo` (an FP32 input `INPUT0` of shape [-1, 4] and an output of the same shape), and an infer answer
 * with four FP32 zeros in the binary tensor extension. No statistics extension: perf runs without a server side.
 *
 *   node dist/bench/perf/echo-server.js [port]     prints `listening <port>`, stops on SIGTERM or SIGINT
 */
import * as net from 'node:net';

const METADATA = { name: 'echo', versions: ['1'], platform: 'bare', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [-1, 4] }], outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [-1, 4] }] };
const CONFIG = { name: 'echo', max_batch_size: 8, input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4] }], output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [4] }] };
const INFER_HEAD = { model_name: 'echo', model_version: '1', outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } }] };

/** A whole HTTP/1.1 answer: status, headers, body. */
function answer(status: string, body: Buffer, extra = ''): Buffer {
  return Buffer.concat([Buffer.from(`HTTP/1.1 ${status}\r\nContent-Length: ${body.length}\r\n${extra}\r\n`, 'latin1'), body]);
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const inferHead = json(INFER_HEAD);
const ANSWERS = {
  ready: answer('200 OK', Buffer.alloc(0)),
  metadata: answer('200 OK', json(METADATA), 'Content-Type: application/json\r\n'),
  config: answer('200 OK', json(CONFIG), 'Content-Type: application/json\r\n'),
  infer: answer('200 OK', Buffer.concat([inferHead, Buffer.alloc(16)]), `Content-Type: application/octet-stream\r\nInference-Header-Content-Length: ${inferHead.length}\r\n`),
  notFound: answer('404 Not Found', json({ error: 'not found' }), 'Content-Type: application/json\r\n'),
};

/** The answer to a request line. */
function route(requestLine: string): Buffer {
  const [method, path = ''] = requestLine.split(' ');
  if (method === 'POST' && path.endsWith('/infer')) return ANSWERS.infer;
  if (path === '/v2/health/ready' || path === '/v2/health/live') return ANSWERS.ready;
  if (/^\/v2\/models\/echo(\/versions\/1)?$/.test(path)) return ANSWERS.metadata;
  if (/^\/v2\/models\/echo(\/versions\/1)?\/config$/.test(path)) return ANSWERS.config;
  return ANSWERS.notFound;
}

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

const server = net.createServer((socket) => {
  socket.setNoDelay(true);
  let pending: Buffer | undefined;
  socket.on('data', (chunk: Buffer) => {
    let data = pending ? Buffer.concat([pending, chunk]) : chunk;
    const out: Buffer[] = [];
    for (;;) {
      const headEnd = data.indexOf('\r\n\r\n');
      if (headEnd < 0) break;
      const head = data.toString('latin1', 0, headEnd);
      const end = headEnd + 4 + Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
      if (data.length < end) break;
      out.push(route(head.slice(0, head.indexOf('\r\n'))));
      data = data.subarray(end);
    }
    pending = data.length > 0 ? data : undefined;
    if (out.length > 0) socket.write(out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out));
  });
  socket.on('error', () => socket.destroy());
});

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as net.AddressInfo).port}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => server.close(() => process.exit(0)));
