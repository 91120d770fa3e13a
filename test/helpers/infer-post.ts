import * as http from 'node:http';

const BODY = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] }] });

/**
 * One POST of a small FP32 infer request to model `double` over `agent` (a keep-alive pool in the drain tests). A
 * failure carries `reused`: whether it came on a connection an earlier request had used.
 */
export function postInfer(agent: http.Agent, port: number): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: '/v2/models/double/infer', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(BODY) } },
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
    req.end(BODY);
  });
}
