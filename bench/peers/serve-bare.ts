/**
 * The floor for the side-by-side's concurrency-1 cells (bench/peers/floor.py): the least a Node server can do to
 * answer them. HTTP (node:http, TSTRITON_HTTP_PORT or 8000): a model's `ready` is 200; `infer` reads the body,
 * parses its JSON and answers add_sub (sum and difference) or identity (the input) in JSON. gRPC (node:http2,
 * TSTRITON_GRPC_PORT or 8001): every call is answered with an empty ModelInferResponse, without reading the
 * request. No routing table, validation, scheduling or metrics: what node:http and node:http2 cost by themselves.
 *
 *   node dist/bench/peers/serve-bare.js
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';

interface JsonInput {
  name: string;
  shape: number[];
  data: number[];
}

/** The answer to a KServe JSON infer request for add_sub or identity. */
function answer(model: string, inputs: JsonInput[]): object {
  const [a, b] = inputs;
  if (!a) throw new Error('no input');
  if (model === 'add_sub' && b) {
    return {
      model_name: model,
      model_version: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: a.shape, data: a.data.map((x, i) => x + (b.data[i] as number)) },
        { name: 'OUTPUT1', datatype: 'FP32', shape: a.shape, data: a.data.map((x, i) => x - (b.data[i] as number)) },
      ],
    };
  }
  return { model_name: model, model_version: '1', outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: a.shape, data: a.data }] };
}

const INFER = /^\/v2\/models\/([^/]+)\/infer$/;

const web = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = req.url ?? '';
    let status = 200;
    let body = '';
    const infer = INFER.exec(url);
    if (infer) {
      try {
        body = JSON.stringify(answer(infer[1] as string, (JSON.parse(Buffer.concat(chunks).toString()) as { inputs: JsonInput[] }).inputs));
      } catch (err) {
        status = 400;
        body = JSON.stringify({ error: String(err) });
      }
    } else if (url === '/v2') {
      body = JSON.stringify({ name: 'bare', version: process.version, extensions: [] });
    } else if (!/^\/v2\/models\/[^/]+\/ready$/.test(url)) {
      status = 404;
    }
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});

/** An empty ModelInferResponse as a gRPC message: not compressed, length 0. */
const EMPTY_MESSAGE = Buffer.alloc(5);

const grpc = http2.createServer();
grpc.on('stream', (stream) => {
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc+proto' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(EMPTY_MESSAGE);
  });
  stream.on('error', () => {});
});

web.listen(Number(process.env.TSTRITON_HTTP_PORT ?? 8000), '127.0.0.1');
grpc.listen(Number(process.env.TSTRITON_GRPC_PORT ?? 8001), '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    web.close();
    grpc.close();
    process.exit(0);
  });
}
