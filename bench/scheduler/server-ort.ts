/**
 * The baseline of the worker-instance bench: a bare node:http KServe v2 server that runs the identity ONNX
 * model in an onnxruntime session on its own (main) thread, one `run()` per request, with the thread
 * settings of our ONNX instances (1 intra-op and 1 inter-op thread, all graph optimizations). It does the
 * minimum a correct server must do for this request: read the body, honour Inference-Header-Content-Length,
 * parse the JSON header, take INPUT0 from the binary section, run the session, answer OUTPUT0 in binary.
 * No validation, routing, scheduling or error table.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as ort from 'onnxruntime-node';
import { runChild } from './child';

interface RequestJson {
  id?: string;
  inputs: { name: string; datatype: string; shape: number[]; parameters?: { binary_data_size?: number } }[];
}

runChild(async () => {
  const modelPath = process.argv[2];
  if (!modelPath) throw new Error('usage: server-ort <identity.onnx>');
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  const [inputName] = session.inputNames;
  const [outputName] = session.outputNames;
  if (!inputName || !outputName) throw new Error('the model needs an input and an output');

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        try {
          const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
          const headLength = Number(req.headers['inference-header-content-length'] ?? body.length);
          const header = JSON.parse(body.toString('utf8', 0, headLength)) as RequestJson;
          const input = header.inputs.find((i) => i.name === 'INPUT0');
          const size = input?.parameters?.binary_data_size;
          if (!input || size === undefined) throw new Error('expected INPUT0 in binary');
          const bytes = body.subarray(headLength, headLength + size);
          const aligned = bytes.byteOffset % 4 === 0 ? bytes : Buffer.from(bytes);
          const data = new Float32Array(aligned.buffer, aligned.byteOffset, size / 4);
          const results = await session.run({ [inputName]: new ort.Tensor('float32', data, input.shape) });
          const y = results[outputName] as ort.Tensor;
          const out = y.data as Float32Array;
          const response: Record<string, unknown> = {
            model_name: 'identity_fp32',
            model_version: '1',
            outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: y.dims, parameters: { binary_data_size: out.byteLength } }],
          };
          if (header.id) response.id = header.id;
          const head = Buffer.from(JSON.stringify(response), 'utf8');
          res.writeHead(200, {
            'Content-Type': 'application/octet-stream',
            'Inference-Header-Content-Length': head.length,
            'Content-Length': head.length + out.byteLength,
          });
          res.cork();
          res.write(head);
          res.end(new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
        } catch (err) {
          const text = JSON.stringify({ error: (err as Error).message });
          res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
          res.end(text);
        }
      })();
    });
  };

  const server = http.createServer({ noDelay: true }, handle);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => void session.release().finally(done));
        server.closeAllConnections();
      }),
  };
});
