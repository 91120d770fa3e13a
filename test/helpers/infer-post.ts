import * as http from 'node:http';

/** A POST the drain tests send in loops: its path and JSON body. */
export interface InferPost {
  readonly path: string;
  readonly body: string;
}

/** A small FP32 infer request to model `double` (the drain fixture's), on the HTTP port. */
export const KSERVE_INFER: InferPost = {
  path: '/v2/models/double/infer',
  body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] }),
};

/** A completion of model `echo_text` (the drain fixture's), on the OpenAI port. */
export const OPENAI_COMPLETION: InferPost = {
  path: '/v1/completions',
  body: JSON.stringify({ model: 'echo_text', prompt: 'hi' }),
};

/**
 * One POST of `request` (by default a small FP32 infer request to model `double`) over `agent` (a keep-alive pool
 * in the drain tests). A failure carries `reused`: whether it came on a connection an earlier request had used.
 */
export function postInfer(agent: http.Agent, port: number, request: InferPost = KSERVE_INFER): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: request.path, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(request.body) } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
        res.on('error', reject);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException & { reused?: boolean }) => {
      err.reused = req.reusedSocket;
      reject(err);
    });
    req.end(request.body);
  });
}
