import * as path from 'node:path';
import { type Triton, tensor, workers, type Request, type Response, type Tensor } from '../../lib';
import { batch, groupByKeys, padBatch, type BatchContext } from '../../decorators';
import { bindRaggedSum } from '../../examples/ragged/model';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

/** A server with what `bind` binds, stopped after the test (tracked). */
async function start(bind: (t: Triton) => void): Promise<Triton> {
  const triton = track(loopbackTriton());
  bind(triton);
  await triton.run();
  return triton;
}

interface Answer {
  status: number;
  body: { outputs?: { name: string; shape: number[]; data: number[] }[]; error?: string };
}

function infer(triton: Triton, model: string, values: number[]): Promise<Answer> {
  const body = JSON.stringify({ inputs: [{ name: 'INPUT', datatype: 'FP32', shape: [1, values.length], data: values }] });
  return fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/${model}/infer`, { method: 'POST', body }).then(async (r) => ({ status: r.status, body: (await r.json()) as Answer['body'] }));
}

async function statsOf(triton: Triton, model: string): Promise<{ inference_count: number; execution_count: number }> {
  const stats = (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/${model}/stats`).then((r) => r.json())) as { model_stats: { inference_count: number; execution_count: number }[] };
  return stats.model_stats[0]!;
}

const vector = (n: number) => Array.from({ length: n }, (_, i) => (i % 7) - 2.5);

describe('ragged batching', () => {
  it('ragged_sum: 100 concurrent requests of lengths 1..100 get their own sums, in fewer executions', async () => {
    const triton = await start(bindRaggedSum);
    const lengths = Array.from({ length: 100 }, (_, i) => i + 1);
    const answers = await Promise.all(lengths.map((n) => infer(triton, 'ragged_sum', vector(n))));
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.body.outputs?.[0]?.shape).toEqual([1, 1]);
      expect(a.body.outputs?.[0]?.data).toEqual([vector(i + 1).reduce((s, v) => s + v, 0)]);
    });
    const stats = await statsOf(triton, 'ragged_sum');
    expect(stats.inference_count).toBe(100);
    expect(stats.execution_count).toBeLessThan(100);
    const config = (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/ragged_sum/config`).then((r) => r.json())) as Record<string, unknown>;
    expect((config.input as { allow_ragged_batch: boolean }[])[0]!.allow_ragged_batch).toBe(true);
    expect(config.batch_input).toEqual([{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', target_name: ['INDEX'], data_type: 'TYPE_INT32', source_input: ['INPUT'] }]);
  });

  /** Binds `model` over INPUT FP32 [-1] (ragged) and OUTPUT FP32 [-1], batches held until 8 requests queue. */
  function bindRagged(t: Triton, model: string, inferFunc: unknown, extra: Record<string, unknown> = {}): void {
    t.bind({
      modelName: model,
      inferFunc: inferFunc as (requests: Request[]) => Promise<Response[]>,
      inputs: [{ name: 'INPUT', dtype: 'FP32', shape: [-1], allowRaggedBatch: true }],
      outputs: [{ name: 'OUTPUT', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 200_000, preferredBatchSize: [8] }, ...extra },
      strict: true,
    });
  }

  it('@batch over @padBatch sees one padded batch of mixed shapes and answers each request with its own shape', async () => {
    const shapes: number[][] = [];
    class Doubler {
      @batch
      @padBatch
      infer(inputs: Record<string, Tensor>, context: BatchContext) {
        shapes.push([...inputs.INPUT!.shape, context.requests.length]);
        const x = inputs.INPUT!.data as Float32Array;
        return { OUTPUT: tensor('FP32', inputs.INPUT!.shape, x.map((v) => v * 2)) };
      }
    }
    const triton = await start((t) => bindRagged(t, 'padded', new Doubler()));
    const lengths = [3, 1, 5, 2, 4, 1, 2, 3];
    const answers = await Promise.all(lengths.map((n) => infer(triton, 'padded', vector(n))));
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.body.outputs?.[0]?.shape).toEqual([1, lengths[i]]);
      expect(a.body.outputs?.[0]?.data).toEqual(vector(lengths[i] as number).map((v) => v * 2));
    });
    // One batch of all 8, padded to the longest.
    expect(shapes).toContainEqual([8, 5, 8]);
  });

  it('@groupByKeys sees a served batch of mixed shapes and answers each request with its own shape', async () => {
    const seen: number[][] = [];
    class Negate {
      @groupByKeys
      infer(requests: Request[]): Response[] {
        seen.push(requests.map((r) => r.inputs.INPUT!.shape[1] as number));
        return requests.map((r) => ({ OUTPUT: tensor('FP32', r.inputs.INPUT!.shape, (r.inputs.INPUT!.data as Float32Array).map((v) => -v)) }));
      }
    }
    const triton = await start((t) => bindRagged(t, 'grouped', new Negate()));
    const lengths = [2, 6, 1, 3, 3, 5, 4, 1];
    const answers = await Promise.all(lengths.map((n) => infer(triton, 'grouped', vector(n))));
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.body.outputs?.[0]?.shape).toEqual([1, lengths[i]]);
      expect(a.body.outputs?.[0]?.data).toEqual(vector(lengths[i] as number).map((v) => -v));
    });
    expect(seen.some((batchLengths) => new Set(batchLengths).size > 1)).toBe(true);
  });

  it('@batch gives batch inputs of every kind and scatters a BATCH_SCATTER_WITH_INPUT_SHAPE output', async () => {
    const seen: Record<string, { shape: readonly number[]; data: number[] }>[] = [];
    class Identity {
      @batch
      infer(inputs: Record<string, Tensor>) {
        seen.push(Object.fromEntries(Object.entries(inputs).map(([k, t]) => [k, { shape: t.shape, data: Array.from(t.data as Float32Array, Number) }])));
        return { OUTPUT: inputs.INPUT! };
      }
    }
    const kinds = ['BATCH_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT', 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO', 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE', 'BATCH_ITEM_SHAPE', 'BATCH_ITEM_SHAPE_FLATTEN'] as const;
    const triton = await start((t) =>
      bindRagged(t, 'kinds', new Identity(), {
        batcher: { maxQueueDelayMicroseconds: 200_000, preferredBatchSize: [3] },
        batchInput: kinds.map((kind, i) => ({ kind, targetName: `B${i}`, dtype: 'INT32', sourceInput: 'INPUT' })),
        batchOutput: [{ kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', targetName: ['OUTPUT'], sourceInput: 'INPUT' }],
      }),
    );
    const answers = await Promise.all([[1, 2], [3, 4, 5, 6], [7]].map((v) => infer(triton, 'kinds', v)));
    expect(answers.map((a) => a.body.outputs?.[0])).toEqual([
      { name: 'OUTPUT', datatype: 'FP32', shape: [1, 2], data: [1, 2] },
      { name: 'OUTPUT', datatype: 'FP32', shape: [1, 4], data: [3, 4, 5, 6] },
      { name: 'OUTPUT', datatype: 'FP32', shape: [1, 1], data: [7] },
    ]);
    const batchOf3 = seen.find((s) => s.B0?.shape[0] === 3)!;
    expect(batchOf3.INPUT).toEqual({ shape: [7], data: [1, 2, 3, 4, 5, 6, 7] });
    expect(batchOf3.B0).toEqual({ shape: [3], data: [2, 4, 1] });
    expect(batchOf3.B1).toEqual({ shape: [3], data: [2, 6, 7] });
    expect(batchOf3.B2).toEqual({ shape: [4], data: [0, 2, 6, 7] });
    expect(batchOf3.B3).toEqual({ shape: [4], data: [0, 0, 0, 0] });
    expect(batchOf3.B4).toEqual({ shape: [3, 1], data: [2, 4, 1] });
    expect(batchOf3.B5).toEqual({ shape: [3], data: [2, 4, 1] });
  });

  it('a worker instance gets the flat input and the batch input too', async () => {
    const triton = await start((t) =>
      t.bind({
        modelName: 'wragged',
        inferFunc: workers({ module: path.join(__dirname, '../fixtures/workers/ragged-sum-model.js'), devices: ['cpu'] }),
        inputs: [{ name: 'INPUT', dtype: 'FP32', shape: [-1], allowRaggedBatch: true }],
        outputs: [{ name: 'SUM', dtype: 'FP32', shape: [1] }],
        config: {
          maxBatchSize: 16,
          batcher: { maxQueueDelayMicroseconds: 100_000, preferredBatchSize: [10] },
          batchInput: [{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', targetName: 'INDEX', dtype: 'INT32', sourceInput: 'INPUT' }],
        },
      }),
    );
    const lengths = Array.from({ length: 10 }, (_, i) => i * 3 + 1);
    const answers = await Promise.all(lengths.map((n) => infer(triton, 'wragged', vector(n))));
    answers.forEach((a, i) => expect(a.body.outputs?.[0]?.data).toEqual([vector(lengths[i] as number).reduce((s, v) => s + v, 0)]));
    expect((await statsOf(triton, 'wragged')).execution_count).toBeLessThan(10);
  });
});
