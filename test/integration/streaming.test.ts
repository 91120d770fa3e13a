import * as http from 'node:http';
import { type Triton, tensor, type Request, type Tensor } from '../../lib';
import { batch, sample } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Reads an SSE response into its `data:` payloads. */
async function sse(url: string, body: unknown): Promise<{ status: number; type: string | null; events: Record<string, unknown>[] }> {
  const res = await fetch(url, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  const events = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => JSON.parse(e.slice(6)) as Record<string, unknown>);
  return { status: res.status, type: res.headers.get('content-type'), events };
}

describe('decoupled models', () => {
  let triton: Triton;
  let base: string;
  const seen: { started: number; closed: number; aborted: number } = { started: 0, closed: 0, aborted: 0 };

  beforeEach(async () => {
    Object.assign(seen, { started: 0, closed: 0, aborted: 0 });
    triton = loopbackTriton();
    triton.bind({
      modelName: 'words',
      inferFunc: sample(async function* (inputs: Record<string, Tensor>, request: Request) {
        seen.started++;
        try {
          const text = Buffer.from((inputs.TEXT as Tensor<'BYTES'>).data[0]!).toString();
          if (text === 'explode') throw new Error('generator exploded');
          for (const w of text.split(' ')) {
            if (w === 'boom') throw new Error('exploded mid-stream');
            if (text.startsWith('slow')) await new Promise((r) => setTimeout(r, 20));
            if (request.signal.aborted) {
              seen.aborted++;
              return;
            }
            yield { WORD: tensor('BYTES', [1], [w]) };
          }
        } finally {
          seen.closed++;
        }
      }),
      inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    triton.bind({
      modelName: 'counter',
      inferFunc: batch(async function* ({ N }: Record<string, Tensor>) {
        const n = N!.data as Int32Array;
        for (let step = 1; step <= 3; step++) yield { OUT: tensor('INT32', N!.shape, n.map((v) => v * step)) };
      }),
      inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }],
      outputs: [{ name: 'OUT', dtype: 'INT32', shape: [1] }],
      config: { maxBatchSize: 8, decoupled: true },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    await triton.stop();
  });

  it('generate_stream sends one SSE event per response', async () => {
    const r = await sse(`${base}/v2/models/words/generate_stream`, { TEXT: 'the quick fox', id: 'g1' });
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/event-stream; charset=utf-8');
    expect(r.events).toEqual(['the', 'quick', 'fox'].map((w) => ({ id: 'g1', model_name: 'words', model_version: '1', WORD: w })));
    expect(seen.closed).toBe(1);
  });

  it('a @batch generator streams each yielded batch split per request', async () => {
    const r = await sse(`${base}/v2/models/counter/generate_stream`, { N: 7 });
    expect(r.events.map((e) => e.OUT)).toEqual([7, 14, 21]);
  });

  it('generate on a decoupled model needs exactly one response', async () => {
    const one = await fetch(`${base}/v2/models/words/generate`, { method: 'POST', body: JSON.stringify({ TEXT: 'single' }) });
    expect(await one.json()).toEqual({ model_name: 'words', model_version: '1', WORD: 'single' });
    const many = await fetch(`${base}/v2/models/words/generate`, { method: 'POST', body: JSON.stringify({ TEXT: 'a b' }) });
    expect(many.status).toBe(400);
    expect(((await many.json()) as { error: string }).error).toMatch(/generate expects model to produce exactly 1 response/);
  });

  it('an error after the first response arrives as an SSE error event; before it, as a JSON error', async () => {
    const before = await fetch(`${base}/v2/models/words/generate_stream`, { method: 'POST', body: JSON.stringify({ TEXT: 'explode' }) });
    expect(before.status).toBe(500);
    expect(await before.json()).toEqual({ error: 'generator exploded' });
    const after = await sse(`${base}/v2/models/words/generate_stream`, { TEXT: 'one two boom three' });
    expect(after.status).toBe(200);
    expect(after.events).toEqual([
      { model_name: 'words', model_version: '1', WORD: 'one' },
      { model_name: 'words', model_version: '1', WORD: 'two' },
      { error: 'exploded mid-stream' },
    ]);
    const missing = await fetch(`${base}/v2/models/words/generate_stream`, { method: 'POST', body: '{"nope":1}' });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toMatch(/missing required input\(s\) \['TEXT'\]/);
  });

  it('/infer refuses a decoupled model with 501', async () => {
    const res = await fetch(`${base}/v2/models/words/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1], data: ['x'] }] }),
    });
    expect(res.status).toBe(501);
    expect(((await res.json()) as { error: string }).error).toBe("HTTP end point doesn't support models with decoupled transaction policy");
  });

  it('a client that disconnects mid-stream stops the generator and counts as CANCELED', async () => {
    const model = triton.repository.get('words');
    await new Promise<void>((resolve, reject) => {
      const req = http.request(`${base}/v2/models/words/generate_stream`, { method: 'POST' }, (res) => {
        res.once('data', () => req.destroy()); // first token read, then gone
      });
      req.on('error', () => undefined);
      req.on('close', () => resolve());
      req.on('timeout', reject);
      req.end(JSON.stringify({ TEXT: `slow ${'w '.repeat(200)}` }));
    });
    const deadline = Date.now() + 5000;
    while (seen.closed < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(seen.closed).toBe(1);
    expect(seen.aborted).toBe(1);
    while (model.statistics.failures.CANCELED < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(model.statistics.failures.CANCELED).toBe(1);
    expect(model.liveRequests).toBe(0);
  });
});

describe('cancellation and deadlines', () => {
  let triton: Triton;
  let calls: string[];
  let releaseHeld: () => void;

  beforeEach(async () => {
    calls = [];
    triton = loopbackTriton();
    let held = new Promise<void>((r) => (releaseHeld = r));
    triton.bind({
      modelName: 'slow',
      inferFunc: async (requests: Request[]) => {
        calls.push(...requests.map((r) => r.id));
        const r0 = requests[0]!;
        if (r0.id.startsWith('hold')) await held;
        if (r0.id.startsWith('sleep')) await new Promise((res) => setTimeout(res, 300));
        if (r0.id.startsWith('fail')) throw new Error('failing on purpose');
        held = new Promise<void>((r) => (releaseHeld = r));
        return requests.map((r) => ({ y: r.inputs.x! }));
      },
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { batching: false },
    });
    await triton.run();
  });

  afterEach(async () => {
    releaseHeld();
    await triton.stop();
  });

  const post = (id: string, parameters?: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/slow/infer`, {
      method: 'POST',
      signal,
      body: JSON.stringify({ id, parameters, inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [1] }] }),
    });

  it('a queued request cancelled before it runs never reaches the callable', async () => {
    const model = triton.repository.get('slow');
    const first = post('hold-1');
    while (calls.length < 1) await new Promise((r) => setImmediate(r));
    const ac = new AbortController();
    const queued = post('gone', undefined, ac.signal).catch((e: Error) => e);
    while (model.scheduler.pendingCount < 1) await new Promise((r) => setImmediate(r));
    ac.abort();
    await queued;
    while (model.scheduler.pendingCount > 0) await new Promise((r) => setImmediate(r));
    releaseHeld();
    expect((await first).status).toBe(200);
    expect(calls).toEqual(['hold-1']);
    expect(model.statistics.failures.CANCELED).toBe(1);
  });

  it("a deadline ends a slow request with Triton's timeout error", async () => {
    const res = await post('sleep-1', { timeout: 50_000 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/Request timeout expired after 50 ms/);
  });

  it('releases every per-request state over a run of cancels, timeouts and errors', async () => {
    const model = triton.repository.get('slow');
    const runs: Promise<unknown>[] = [];
    for (let i = 0; i < 30; i++) {
      const kind = i % 3;
      if (kind === 0) runs.push(post(`fail-${i}`));
      else if (kind === 1) runs.push(post(`sleep-${i}`, { timeout: 20_000 }));
      else {
        const ac = new AbortController();
        runs.push(post(`ok-${i}`, undefined, ac.signal).catch(() => undefined));
        setTimeout(() => ac.abort(), 5);
      }
    }
    await Promise.all(runs);
    while (model.scheduler.outstanding > 0) await new Promise((r) => setTimeout(r, 10));
    expect(model.liveRequests).toBe(0);
    expect(model.scheduler.pendingCount).toBe(0);
    const { created, released } = model.requestStates;
    expect(created).toBeGreaterThanOrEqual(20); // every failing and timed-out request reached the model
    expect(released).toBe(created);
    const s = model.statistics;
    expect(s.success.count + s.fail.count).toBe(created);
  });
});
