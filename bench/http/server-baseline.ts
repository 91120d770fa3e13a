/**
 * The baseline: a bare node:http KServe v2 echo. It does the minimum a correct server must do for this
 * request (read the body, honour Inference-Header-Content-Length, parse the JSON header, take INPUT0 as a
 * Float32Array from the binary section or the JSON `data`, answer OUTPUT0 in the format asked for) and
 * nothing else: no validation, routing, scheduling or error table.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runServerChild } from './child';

interface InputJson {
  name: string;
  datatype: string;
  shape: number[];
  data?: number[];
  parameters?: { binary_data_size?: number };
}
interface RequestJson {
  id?: string;
  inputs: InputJson[];
  outputs?: { name: string; parameters?: { binary_data?: boolean } }[];
  parameters?: { binary_data_output?: boolean };
}

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    try {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      const ihcl = req.headers['inference-header-content-length'];
      const headLength = ihcl === undefined ? body.length : Number(ihcl);
      const header = JSON.parse(body.toString('utf8', 0, headLength)) as RequestJson;
      let offset = headLength;
      let input: Float32Array | undefined;
      let shape: number[] = [];
      for (const i of header.inputs) {
        const size = i.parameters?.binary_data_size;
        let data: Float32Array;
        if (size !== undefined) {
          const bytes = body.subarray(offset, offset + size);
          offset += size;
          const aligned = bytes.byteOffset % 4 === 0 ? bytes : Buffer.from(bytes);
          data = new Float32Array(aligned.buffer, aligned.byteOffset, size / 4);
        } else {
          data = Float32Array.from(i.data ?? []);
        }
        if (i.name === 'INPUT0') {
          input = data;
          shape = i.shape;
        }
      }
      if (!input) throw new Error('no INPUT0');
      const binary = header.outputs?.find((o) => o.name === 'OUTPUT0')?.parameters?.binary_data ?? header.parameters?.binary_data_output ?? false;
      const out: Record<string, unknown> = { name: 'OUTPUT0', datatype: 'FP32', shape };
      const response: Record<string, unknown> = { model_name: 'identity_fp32', model_version: '1', outputs: [out] };
      if (header.id) response.id = header.id;
      if (!binary) {
        out.data = Array.from(input);
        const text = Buffer.from(JSON.stringify(response), 'utf8');
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': text.length });
        res.end(text);
        return;
      }
      out.parameters = { binary_data_size: input.byteLength };
      const head = Buffer.from(JSON.stringify(response), 'utf8');
      res.writeHead(200, {
        'Content-Type': 'application/octet-stream',
        'Inference-Header-Content-Length': head.length,
        'Content-Length': head.length + input.byteLength,
      });
      res.cork();
      res.write(head);
      res.end(new Uint8Array(input.buffer, input.byteOffset, input.byteLength));
    } catch (err) {
      const text = JSON.stringify({ error: (err as Error).message });
      res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    }
  });
}

runServerChild(
  () =>
    new Promise((resolve, reject) => {
      const server = http.createServer({ noDelay: true }, handle);
      server.keepAliveTimeout = 65_000;
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () =>
        resolve({
          port: (server.address() as AddressInfo).port,
          stop: () =>
            new Promise<void>((done) => {
              server.close(() => done());
              server.closeAllConnections();
            }),
        }),
      );
    }),
);
