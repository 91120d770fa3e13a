import { Triton, type ModelConfigInit } from '../../lib';
import { batch } from '../../decorators';
import { closedLoop, type ClosedLoopResult } from '../helpers/closed-loop';

/** CPU time each call of the callable takes, whatever its batch size. */
const SPIN_MS = 5;
const CONCURRENCY = 8;
const PER_CONNECTION = 30;

/** Computes synchronously for SPIN_MS, as a `@batch` function doing real math on the main thread does. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

interface Run extends ClosedLoopResult {
  executions: number;
  inferences: number;
  batchSizes: number[];
}

/** Serves the spinning model with `config`, drives it at CONCURRENCY over HTTP and reads its statistics. */
async function drive(config: ModelConfigInit): Promise<Run> {
  const triton = new Triton({ httpPort: 0, httpAddress: '127.0.0.1', allowGrpc: false, allowMetrics: false, logLevel: 'silent' });
  triton.bind({
    modelName: 'spin',
    inferFunc: batch((inputs) => {
      spin(SPIN_MS);
      return { y: inputs.x! };
    }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [4] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [4] }],
    config,
  });
  await triton.run();
  try {
    const base = `http://127.0.0.1:${triton.ports.http}/v2/models/spin`;
    const body = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], data: [1, 2, 3, 4] }] });
    const load = await closedLoop(`${base}/infer`, body, CONCURRENCY, PER_CONNECTION);
    const stats = (await (await fetch(`${base}/stats`)).json()) as {
      model_stats: { execution_count: number; inference_count: number; batch_stats: { batch_size: number }[] }[];
    };
    const s = stats.model_stats[0]!;
    return { ...load, executions: s.execution_count, inferences: s.inference_count, batchSizes: s.batch_stats.map((b) => b.batch_size) };
  } finally {
    await triton.stop();
  }
}

describe('dynamic batching of a synchronous in-process callable', () => {
  it('forms batches from the requests that arrive while the callable blocks the event loop, at least tripling throughput', async () => {
    const unbatched = await drive({ maxBatchSize: 8, batcher: null });
    const batched = await drive({ maxBatchSize: 8 });
    const total = CONCURRENCY * PER_CONNECTION;
    for (const run of [unbatched, batched]) {
      expect(run.failures).toEqual([]);
      expect(run.ok).toBe(total);
      expect(run.inferences).toBe(total);
    }
    // Without a batcher every request is an execution of its own.
    expect(unbatched.executions).toBe(total);
    expect(unbatched.batchSizes).toEqual([1]);
    // With one, the requests that queued while the callable spun run together.
    expect(Math.max(...batched.batchSizes)).toBeGreaterThan(1);
    expect(batched.executions).toBeLessThanOrEqual(total / 3);
    const throughput = (r: Run) => r.ok / r.elapsedMs;
    expect(throughput(batched) / throughput(unbatched)).toBeGreaterThanOrEqual(3);
  });
});
