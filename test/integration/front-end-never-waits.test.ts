import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Triton, Request, Response } from 'tstriton';
import { spawnTracked, track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// A front-end thread never waits on the core thread: while an in-process callable holds the core thread (it runs
// there and does not yield), the front-end threads still answer liveness, readiness, a model's readiness, metadata
// and config from what the core published, and statistics from the ones it last published. The probes come from a
// child process, since the held core thread is this process's own: each must be answered while the core is still
// held, which the child reads from the file the callable writes once it lets go.

/** How long the callable holds the core thread. */
const HOLD_MS = 3_000;

interface Probe {
  path: string;
  status: number;
  body: string;
  ms: number;
  whileHeld: boolean;
  /** Sent alone on an open connection (the others went together, each on a new connection). */
  alone?: boolean;
}

describe('a front-end thread while the core thread is held by a callable', () => {
  let triton: Triton;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tstriton-held-'));
    triton = track(loopbackTriton({ allowGrpc: true, httpThreadCount: 2 }));
    triton.bind({
      modelName: 'hold',
      // Runs on the core thread (in-process) and holds it: says so in a file, spins for `ms`, then says it let go.
      inferFunc: async (requests: Request[]): Promise<Response[]> =>
        requests.map((r) => {
          const ms = (r.inputs.ms!.data as Float32Array)[0]!;
          if (ms > 0) {
            writeFileSync(join(dir, 'held'), '');
            const end = Date.now() + ms;
            while (Date.now() < end) {
              // the core thread is held
            }
            writeFileSync(join(dir, 'released'), '');
          }
          return { ms: r.inputs.ms! };
        }),
      inputs: [{ name: 'ms', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'ms', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 4 },
    });
    await triton.run();
  }, 120_000);

  afterAll(async () => {
    await triton?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('answers liveness, readiness, model readiness, metadata, config and statistics before the core is free again', async () => {
    const base = `http://127.0.0.1:${triton.ports.http}`;
    // One request that does not hold, then statistics through a front-end thread: the core answers, and publishes
    // them to every thread.
    const warm = await fetch(`${base}/v2/models/hold/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'ms', datatype: 'FP32', shape: [1, 1], data: [0] }] }) });
    expect(warm.status).toBe(200);
    expect((await fetch(`${base}/v2/models/stats`)).status).toBe(200);
    expect(existsSync(join(dir, 'held'))).toBe(false);

    const child = spawnTracked(process.execPath, [join(__dirname, '..', 'fixtures', 'front-end', 'probe-while-held.js'), String(triton.ports.http), dir, String(HOLD_MS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const { probes, held } = JSON.parse(out) as { probes: Probe[]; held: number };

    expect(held).toBe(200);
    if (process.env.TSTRITON_PRINT_PROBES) process.stdout.write(JSON.stringify(probes.filter((p) => p.alone).map(({ path, ms }) => [path, Math.round(ms * 10) / 10])) + '\n');
    expect(existsSync(join(dir, 'released'))).toBe(true);
    // Every probe answered, and answered while the core thread was still held.
    expect(probes.filter((p) => p.status !== 200 || !p.whileHeld).map(({ path, status, whileHeld }) => ({ path, status, whileHeld }))).toEqual([]);
    // Statistics as the core last published them: the warm-up request counted.
    for (const p of probes.filter((x) => x.path.endsWith('/stats'))) {
      const stats = (JSON.parse(p.body) as { model_stats: { name: string; inference_stats: { success: { count: number } } }[] }).model_stats;
      expect(stats.find((s) => s.name === 'hold')?.inference_stats.success.count).toBeGreaterThanOrEqual(1);
    }
    expect(JSON.parse(probes.find((p) => p.path === '/v2/models/hold')!.body)).toMatchObject({ name: 'hold', versions: ['1'] });
  });
});
