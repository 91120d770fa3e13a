import { Triton, type Request, type Tensor } from '../../lib';
import { bindSequenceAccumulate } from '../../examples/sequence/model';
import type { SequenceBatcher } from '../../lib/scheduler/sequence-batcher';

const servers: Triton[] = [];

afterEach(async () => {
  for (const t of servers.splice(0)) await t.stop();
});

async function start(bind: (t: Triton) => void): Promise<Triton> {
  const triton = new Triton({ httpPort: 0, httpAddress: '127.0.0.1', allowGrpc: false, allowMetrics: false, logLevel: 'silent' });
  servers.push(triton);
  bind(triton);
  await triton.run();
  return triton;
}

interface Answer {
  status: number;
  body: { outputs?: { name: string; data: number[] }[]; error?: string };
}

function infer(triton: Triton, model: string, value: number, parameters: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Answer> {
  const body = JSON.stringify({ parameters, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }], ...extra });
  return fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/${model}/infer`, { method: 'POST', body }).then(async (r) => ({ status: r.status, body: (await r.json()) as Answer['body'] }));
}

function batcherOf(triton: Triton, model: string): SequenceBatcher<unknown> {
  return (triton as unknown as { repository: { get(n: string): { scheduler: SequenceBatcher<unknown> } } }).repository.get(model).scheduler;
}

/** Runs one sequence of `values` request by request; returns the OUTPUT of each. */
async function runSequence(triton: Triton, id: number | string, values: number[]): Promise<number[]> {
  const sums: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const answer = await infer(triton, 'sequence_accumulate', values[i] as number, { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 });
    expect(answer.status).toBe(200);
    sums.push((answer.body.outputs?.[0]?.data[0] ?? NaN) as number);
  }
  return sums;
}

const runningSums = (values: number[]) => values.map((_, i) => values.slice(0, i + 1).reduce((a, b) => a + b, 0));

describe('sequence batcher', () => {
  it('keeps a running sum per sequence across 16 interleaved sequences and batches them', async () => {
    const triton = await start(bindSequenceAccumulate);
    const sequences = Array.from({ length: 16 }, (_, s) => Array.from({ length: 1 + ((s * 7) % 23) }, (_, i) => (s + 1) * 10 + i));
    const results = await Promise.all(sequences.map((values, s) => runSequence(triton, s % 2 === 0 ? s + 1 : `seq-${s}`, values)));
    results.forEach((sums, s) => expect(sums).toEqual(runningSums(sequences[s] as number[])));
    const stats = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/sequence_accumulate/stats`).then((r) => r.json() as Promise<{ model_stats: { inference_count: number; execution_count: number; batch_stats: { batch_size: number }[] }[] }>);
    const model = stats.model_stats[0]!;
    const requests = sequences.reduce((n, v) => n + v.length, 0);
    expect(model.inference_count).toBe(requests);
    expect(model.execution_count).toBeLessThan(requests);
    expect(model.batch_stats.some((b: { batch_size: number }) => b.batch_size > 1)).toBe(true);
    expect(batcherOf(triton, 'sequence_accumulate').stateBuffers).toEqual({ created: 16, released: 16 });
  });

  it("answers Triton's errors: no correlation id, no START, batch size above 1", async () => {
    const triton = await start(bindSequenceAccumulate);
    const none = await infer(triton, 'sequence_accumulate', 1, {});
    expect(none.status).toBe(400);
    expect(none.body.error).toBe("inference request to model 'sequence_accumulate' must specify a non-zero or non-empty correlation ID");
    const notStarted = await infer(triton, 'sequence_accumulate', 1, { sequence_id: 77 });
    expect(notStarted.status).toBe(400);
    expect(notStarted.body.error).toBe("inference request for sequence 77 to model 'sequence_accumulate' must specify the START flag on the first request of the sequence");
    const notStartedString = await infer(triton, 'sequence_accumulate', 1, { sequence_id: 'abc' });
    expect(notStartedString.body.error).toBe("inference request for sequence abc to model 'sequence_accumulate' must specify the START flag on the first request of the sequence");
    const badType = await infer(triton, 'sequence_accumulate', 1, { sequence_id: 1.5, sequence_start: true });
    expect(badType.status).toBe(400);
    expect(badType.body.error).toMatch(/^invalid value type for 'sequence_id' parameter, expected int64_param or string_param/);
    const body = JSON.stringify({ parameters: { sequence_id: 5, sequence_start: true }, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [2, 1], data: [1, 2] }] });
    const twoRows = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/sequence_accumulate/infer`, { method: 'POST', body }).then((r) => r.json() as Promise<{ error: string }>);
    expect(twoRows.error).toBe("inference request to model 'sequence_accumulate' must specify batch-size 1 due to requirements of sequence batcher");
    // After an END the id is free: a request without START fails again.
    expect(await runSequence(triton, 9, [1, 2])).toEqual([1, 3]);
    expect((await infer(triton, 'sequence_accumulate', 1, { sequence_id: 9 })).status).toBe(400);
    // A START on a live sequence restarts it (Triton ends the previous one early).
    await infer(triton, 'sequence_accumulate', 5, { sequence_id: 10, sequence_start: true });
    const restarted = await infer(triton, 'sequence_accumulate', 7, { sequence_id: 10, sequence_start: true, sequence_end: true });
    expect(restarted.body.outputs?.[0]?.data).toEqual([7]);
  });

  it('frees a sequence idle past maxSequenceIdleMicroseconds; a later request needs START', async () => {
    const triton = await start((t) =>
      t.bind({
        modelName: 'acc',
        inferFunc: (requests: Request[]) =>
          requests.map((r) => {
            const sum = (r.inputs.INPUT!.data as Int32Array)[0]! + (r.inputs.S!.data as Int32Array)[0]!;
            return { OUTPUT: { shape: [1, 1], data: Int32Array.of(sum) }, S_OUT: { shape: [1, 1], data: Int32Array.of(sum) } };
          }),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: { maxBatchSize: 4, sequenceBatching: { maxSequenceIdleMicroseconds: 50_000, state: [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }] } },
      }),
    );
    const first = await infer(triton, 'acc', 3, { sequence_id: 1, sequence_start: true });
    expect(first.body.outputs?.[0]?.data).toEqual([3]);
    const batcher = batcherOf(triton, 'acc');
    expect(batcher.stateBuffers).toEqual({ created: 1, released: 0 });
    // Wait (by polling the batcher, not a fixed sleep) until the reaper frees it.
    while (batcher.liveSequences > 0) await new Promise((r) => setTimeout(r, 20));
    expect(batcher.stateBuffers).toEqual({ created: 1, released: 1 });
    const late = await infer(triton, 'acc', 1, { sequence_id: 1 });
    expect(late.status).toBe(400);
    expect(late.body.error).toBe("inference request for sequence 1 to model 'acc' must specify the START flag on the first request of the sequence");
  });

  it('direct: lays out one slot per sequence with READY false for empty slots, and feeds the controls', async () => {
    const seen: { ready: number[]; start: number[]; end: number[]; corrid: bigint[]; ids: (string | number | bigint | undefined)[] }[] = [];
    const triton = await start((t) =>
      t.bind({
        modelName: 'direct',
        inferFunc: (requests: Request[]) => {
          const col = (name: string) => requests.map((r) => Number((r.inputs[name] as Tensor).data[0]));
          seen.push({ ready: col('READY'), start: col('START'), end: col('END'), corrid: requests.map((r) => (r.inputs.CORRID!.data as BigUint64Array)[0]!), ids: requests.map((r) => r.sequence?.id) });
          return requests.map((r) => ({ OUTPUT: r.inputs.INPUT! }));
        },
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: {
          maxBatchSize: 4,
          sequenceBatching: {
            direct: {},
            controlInput: [
              { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', fp32FalseTrue: [0, 1] }] },
              { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32FalseTrue: [0, 1] }] },
              { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', boolFalseTrue: [false, true] }] },
              { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' }] },
            ],
          },
        },
      }),
    );
    await infer(triton, 'direct', 1, { sequence_id: 11, sequence_start: true });
    await infer(triton, 'direct', 1, { sequence_id: 12, sequence_start: true });
    // Sequence 12 holds slot 1; a request of 12 alone runs with slot 0 (sequence 11) not ready.
    await infer(triton, 'direct', 1, { sequence_id: 12, sequence_end: true });
    const last = seen[seen.length - 1]!;
    expect(last.ready).toEqual([0, 1]);
    expect(last.end).toEqual([0, 1]);
    expect(last.corrid).toEqual([0n, 12n]);
    expect(last.ids).toEqual([undefined, 12]);
    expect(seen[0]!.start).toEqual([1]);
    const config = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/direct/config`).then((r) => r.json() as Promise<{ sequence_batching: { control_input: unknown[]; direct: unknown } }>);
    expect(config.sequence_batching.control_input[3]).toEqual({ name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_UINT64' }] });
    expect(config.sequence_batching.direct).toEqual({ max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 });
    expect(config).not.toHaveProperty('dynamic_batching');
  });
});
