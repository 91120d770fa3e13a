import type { Triton, Tensor, TritonConfigInit } from 'tstriton';
import { ModelClient } from 'tstriton/client';
import { batch } from 'tstriton/decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

/** 2 MiB of FP32: above the pool's 1 MiB threshold. */
const LARGE = 512 * 1024;

let triton: Triton;
const clients: ModelClient[] = [];
/** Every INPUT0 the model saw, kept past its request (which the pool's contract says not to do). */
let kept: Tensor[] = [];

async function serve(config: TritonConfigInit = {}): Promise<void> {
  kept = [];
  triton = loopbackTriton({ allowGrpc: true, ...config });
  triton.bind({
    modelName: 'identity',
    inferFunc: batch((inputs: Record<string, Tensor>) => {
      if ((inputs.INPUT0!.data as Float32Array)[0]! < 0) throw new Error('negative input');
      kept.push(inputs.INPUT0!);
      return { OUTPUT0: inputs.INPUT0! };
    }),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  await triton.run();
}

function client(protocol: 'http' | 'grpc'): ModelClient {
  const port = protocol === 'http' ? triton.ports.http : triton.ports.grpc;
  const c = new ModelClient(`${protocol}://127.0.0.1:${port}`, 'identity');
  clients.push(c);
  return c;
}

/** Distinct contents per request, so that one request's data showing in another's answer is seen. */
function values(seed: number, n = LARGE): Float32Array {
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = seed * 1_000_003 + i;
  return v;
}

/** Polls until `check` holds: the server gives memory back when its write completes, just after the client reads. */
async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await triton?.stop();
});

describe.each(['http', 'grpc'] as const)('request buffer pool over %s', (protocol) => {
  it('answers concurrent large requests intact while their memory is reused', async () => {
    await serve();
    const c = client(protocol);
    let seed = 0;
    const all: Float32Array[] = [];
    for (let round = 0; round < 4; round++) {
      const sent = Array.from({ length: 6 }, () => values(++seed));
      all.push(...sent);
      const answers = await Promise.all(sent.map((v) => c.inferBatch({ INPUT0: { data: v, shape: [1, LARGE] } })));
      answers.forEach((a, i) => expect(Buffer.from((a.OUTPUT0!.data as Float32Array).buffer).equals(Buffer.from(sent[i]!.buffer))).toBe(true));
    }
    // The pool holds memory again, and what the model kept of finished requests reads as empty: never as another
    // request's data (checked row by row, should any still hold data). A gRPC request's memory goes back once its
    // client has read the answer (docs/grpc.md), a round trip after the call closed: the last ones are waited for.
    await eventually(() => triton.requestBuffers.pooledBytes > 0 && kept.every((t) => (t.data as Float32Array).length === 0));
    const sentByFirst = new Map(all.map((v) => [v[0], v]));
    let emptied = 0;
    for (const t of kept) {
      const data = t.data as Float32Array;
      if (data.length === 0) emptied++;
      for (let row = 0; row < data.length / LARGE; row++) {
        const got = data.subarray(row * LARGE, (row + 1) * LARGE);
        const own = sentByFirst.get(got[0]!);
        expect(own && Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(Buffer.from(own.buffer))).toBe(true);
      }
    }
    expect(emptied).toBe(kept.length);
    expect(kept.length).toBeGreaterThanOrEqual(4);
  });

  it('leaves a server without a pool as before: a kept input keeps its data', async () => {
    await serve({ requestBufferPoolByteSize: 0 });
    const large = values(7);
    await client(protocol).inferBatch({ INPUT0: { data: large, shape: [1, LARGE] } });
    await new Promise((r) => setTimeout(r, 50));
    expect(triton.requestBuffers.pooledBytes).toBe(0);
    expect(Buffer.from((kept[0]!.data as Float32Array).slice().buffer).equals(Buffer.from(large.buffer))).toBe(true);
  });

  it('does not pool small requests: a kept input keeps its data', async () => {
    await serve();
    const small = values(8, 1000);
    await client(protocol).inferBatch({ INPUT0: { data: small, shape: [1, 1000] } });
    expect(triton.requestBuffers.pooledBytes).toBe(0);
    expect(Array.from(kept[0]!.data as Float32Array)).toEqual(Array.from(small));
  });

  it('keeps the memory of a request that failed out of the pool', async () => {
    await serve();
    const err = await client(protocol)
      .inferBatch({ INPUT0: { data: new Float32Array(LARGE).fill(-1), shape: [1, LARGE] } })
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(err?.message).toMatch(/negative input/);
    await new Promise((r) => setTimeout(r, 50));
    expect(triton.requestBuffers.pooledBytes).toBe(0);
  });
});
