import { Cancellation } from '../../lib/base/cancellation';
import * as path from 'node:path';
import { type Triton, workers } from '../../lib';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const STREAM = path.join(__dirname, '../fixtures/workers/stream-words.js');

describe('decoupled models on worker instances', () => {
  let triton: Triton;
  let progress: Int32Array;

  beforeEach(async () => {
    const shared = new SharedArrayBuffer(8);
    progress = new Int32Array(shared);
    // Tracked: stopped after the test even if this hook times out while the worker thread starts.
    triton = track(loopbackTriton({ allowHttp: false }));
    triton.bind({
      modelName: 'words',
      inferFunc: workers({ module: STREAM, devices: ['cpu'], data: { progress: shared } }),
      inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1], optional: true }],
      outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    await triton.run();
  });

  const request = (parameters: Record<string, string | number> = {}, text = 'the quick brown fox') => ({
    modelName: 'words',
    id: 'r',
    cancellation: new Cancellation(),
    inputs: [{ name: 'TEXT', tensor: { dtype: 'BYTES' as const, shape: [1], data: [Buffer.from(text)] } }],
    parameters,
  });
  const wordOf = (r: { outputs: readonly { tensor: { data: unknown } }[] }) => Buffer.from((r.outputs[0]!.tensor.data as Uint8Array[])[0]!).toString();

  it('streams every response the worker yields, in order, the last one final', async () => {
    const got: [string, boolean][] = [];
    for await (const r of triton.inferStream(request())) got.push([wordOf(r), r.final]);
    expect(got).toEqual([
      ['the', false],
      ['quick', false],
      ['brown', false],
      ['fox', true],
    ]);
  });

  it('runs a bounded window ahead of a slow reader', async () => {
    const stream = triton.inferStream(request({ count: 200 }))[Symbol.asyncIterator]();
    const first = await stream.next();
    expect(wordOf(first.value)).toBe('w0');
    await new Promise((r) => setTimeout(r, 300));
    // The scheduler's buffer (16) plus the worker's window (16) plus the items in transit; far from 200.
    expect(Atomics.load(progress, 0)).toBeLessThan(50);
    let n = 1;
    for (let next = await stream.next(); !next.done; next = await stream.next()) n++;
    expect(n).toBe(200);
  });

  it('closes the generator in the worker when the reader stops early', async () => {
    const stream = triton.inferStream(request({ count: 10_000, delayMs: 1 }));
    let n = 0;
    for await (const _ of stream) if (++n === 5) break;
    const deadline = Date.now() + 5000;
    while (Atomics.load(progress, 1) === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(Atomics.load(progress, 1)).toBe(1);
    expect(Atomics.load(progress, 0)).toBeLessThan(100);
  });

  it("fails the request when the worker's generator throws, after the responses before it", async () => {
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const r of triton.inferStream(request({ failAt: 2 }))) got.push(wordOf(r));
      })(),
    ).rejects.toThrow(/failed at word 2/);
    expect(got).toEqual(['the', 'quick']);
    // The worker keeps serving.
    const again: string[] = [];
    for await (const r of triton.inferStream(request({}, 'still here'))) again.push(wordOf(r));
    expect(again).toEqual(['still', 'here']);
  });
});
