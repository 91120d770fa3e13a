import * as path from 'node:path';
import { type Triton, ensemble, workers, type Request, type Tensor } from '../../lib';
import { bindSequenceAccumulate } from '../../examples/sequence/model';
import type { SequenceBatcher } from '../../lib/scheduler/sequence-batcher';
import type { Instance } from '../../lib/instances/instance';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

/**
 * For the models whose tests are not about idle sequences: no sequence is freed as idle while the test runs. With
 * Triton's default of one second, two requests of a sequence sent one after the other can be further apart than
 * that on a busy machine, and the second would be refused as not started.
 */
const NO_IDLE_REAP = 600_000_000;

/** A server with what `bind` binds, stopped after the test (tracked). */
async function start(bind: (t: Triton) => void): Promise<Triton> {
  const triton = track(loopbackTriton());
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
async function runSequence(triton: Triton, id: number | string, values: number[], model = 'sequence_accumulate'): Promise<number[]> {
  const sums: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const answer = await infer(triton, model, values[i] as number, { sequence_id: id, sequence_start: i === 0, sequence_end: i === values.length - 1 });
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
            maxSequenceIdleMicroseconds: NO_IDLE_REAP,
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
    const stringId = await infer(triton, 'direct', 1, { sequence_id: 'abc', sequence_start: true });
    expect(stringId.status).toBe(400);
    expect(stringId.body.error).toBe("the model's CONTROL_SEQUENCE_CORRID is UINT64: sequence_id must be an integer, got the string 'abc'");
    const config = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/direct/config`).then((r) => r.json() as Promise<{ sequence_batching: { control_input: unknown[]; direct: unknown } }>);
    expect(config.sequence_batching.control_input[3]).toEqual({ name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_UINT64' }] });
    expect(config.sequence_batching.direct).toEqual({ max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 });
    expect(config).not.toHaveProperty('dynamic_batching');
  });

  it('worker instances: the worker sees the sequence and keeps its state; a crash fails the sequences in its slots, and new ones work after the restart', async () => {
    const triton = await start((t) =>
      t.bind({
        modelName: 'wseq',
        inferFunc: workers({ module: path.join(__dirname, '../fixtures/workers/sequence-model.js'), devices: ['cpu'] }),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [
          { name: 'OUTPUT', dtype: 'INT32', shape: [1] },
          { name: 'SEQ', dtype: 'BYTES', shape: [1] },
          { name: 'THREAD', dtype: 'INT32', shape: [1] },
        ],
        config: { maxBatchSize: 4, sequenceBatching: { oldest: { maxCandidateSequences: 4 }, maxSequenceIdleMicroseconds: NO_IDLE_REAP, state: [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }] } },
      }),
    );
    const out = (a: Answer, name: string) => a.body.outputs?.find((o) => o.name === name)?.data[0];
    // What leaves the main thread for the worker: the state goes only with a START, then stays in the worker.
    const instance = (triton as unknown as { repository: { get(n: string): { instances: Instance[] } } }).repository.get('wseq').instances[0]!;
    const sent: string[][] = [];
    const freed: number[] = [];
    const execute = instance.execute.bind(instance);
    instance.execute = (requests: Request[]) => {
      sent.push(...requests.map((r) => Object.keys(r.inputs).sort()));
      return execute(requests);
    };
    const release = instance.releaseSequenceStates!.bind(instance);
    instance.releaseSequenceStates = (ids: readonly number[]) => {
      freed.push(...ids);
      release(ids);
    };
    const a1 = await infer(triton, 'wseq', 2, { sequence_id: 1, sequence_start: true });
    const b1 = await infer(triton, 'wseq', 3, { sequence_id: 'b', sequence_start: true });
    expect([out(a1, 'OUTPUT'), out(a1, 'SEQ')]).toEqual([2, '1']);
    expect([out(b1, 'OUTPUT'), out(b1, 'SEQ')]).toEqual([3, 'b']);
    expect(out(await infer(triton, 'wseq', 4, { sequence_id: 'b' }), 'OUTPUT')).toBe(7);
    const firstThread = out(a1, 'THREAD');
    expect(sent).toEqual([['INPUT', 'S'], ['INPUT', 'S'], ['INPUT']]);

    const crash = await infer(triton, 'wseq', 1, { sequence_id: 1, action: 'exit' });
    expect(crash.status).toBeGreaterThanOrEqual(400);
    const after = await infer(triton, 'wseq', 1, { sequence_id: 'b' });
    expect(after.status).toBe(503);
    expect(after.body.error).toMatch(/^sequence b of model 'wseq' was lost: instance wseq_0 failed .*; start the sequence again$/);

    const fresh = await infer(triton, 'wseq', 5, { sequence_id: 'b', sequence_start: true });
    expect(fresh.status).toBe(200);
    expect(out(fresh, 'OUTPUT')).toBe(5);
    expect(out(fresh, 'THREAD')).not.toBe(firstThread);
    expect(out(await infer(triton, 'wseq', 6, { sequence_id: 'b', sequence_end: true }), 'OUTPUT')).toBe(11);
    const batcher = batcherOf(triton, 'wseq');
    expect(batcher.liveSequences).toBe(0);
    // The ended sequence's state was freed in the worker that held it.
    expect(freed.length).toBeGreaterThan(0);
    const { created, released } = batcher.stateBuffers;
    expect(created).toBe(released);
  });

  it('creates and frees as many state buffers as it runs sequences, over completions, idle timeouts and cancels', async () => {
    let gate: (() => void) | undefined;
    const held = new Promise<void>((resolve) => (gate = resolve));
    let entered: () => void = () => {};
    const holding = new Promise<void>((resolve) => (entered = resolve));
    const triton = await start((t) =>
      t.bind({
        modelName: 'mixed',
        inferFunc: async (requests: Request[]) => {
          if (requests.some((r) => r.parameters.hold === true)) {
            entered();
            await held;
          }
          return requests.map((r) => {
            const sum = (r.inputs.INPUT!.data as Int32Array)[0]! + (r.inputs.S!.data as Int32Array)[0]!;
            return { OUTPUT: { shape: [1, 1], data: Int32Array.of(sum) }, S_OUT: { shape: [1, 1], data: Int32Array.of(sum) } };
          });
        },
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: { maxBatchSize: 2, sequenceBatching: { oldest: {}, maxSequenceIdleMicroseconds: 100_000, state: [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }] } },
      }),
    );
    const batcher = batcherOf(triton, 'mixed');
    // A completed sequence of one request.
    await runSequence(triton, 'two', [4], 'mixed');
    // Sequences left open: the idle timeout frees them.
    await infer(triton, 'mixed', 1, { sequence_id: 3, sequence_start: true });
    await infer(triton, 'mixed', 1, { sequence_id: 4, sequence_start: true });
    // A sequence whose requests time out (Triton's per-request `timeout`) while queued behind a held batch, its
    // END among them: the sequence still ends, by its idle timeout. It waits for a slot until 3 or 4 is freed.
    const holder = infer(triton, 'mixed', 1, { sequence_id: 5, sequence_start: true, hold: true });
    await holding;
    // A completed sequence of three requests, all queued behind the held batch, each sent once the one before it is
    // queued (so they arrive in order): a sequence with a request queued or running is never idle, so the idle
    // timeout, short as it is for 3, 4 and 5, cannot end this one between its requests however slow the machine.
    const completed: Promise<Answer>[] = [];
    for (const [i, value] of [1, 2, 3].entries()) {
      completed.push(infer(triton, 'mixed', value, { sequence_id: 1, sequence_start: i === 0, sequence_end: i === 2 }));
      while (batcher.pendingCount < i + 1) await new Promise((r) => setTimeout(r, 5));
    }
    const expired = await Promise.all([false, true].map((end) => infer(triton, 'mixed', 1, { sequence_id: 5, sequence_end: end, timeout: 1000 })));
    expect(expired.map((a) => a.body.error)).toEqual(['Request timeout expired', 'Request timeout expired']);
    // Only sequence 1's requests are left queued.
    expect(batcher.pendingCount).toBe(3);
    gate?.();
    expect((await holder).status).toBe(200);
    const answers = await Promise.all(completed);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.body.outputs?.[0]?.data[0])).toEqual(runningSums([1, 2, 3]));
    while (batcher.liveSequences > 0) await new Promise((r) => setTimeout(r, 20));
    expect(batcher.stateBuffers).toEqual({ created: 5, released: 5 });
  });

  it('answers 400 requests of random ids, flags and parameter types with 200 or 400, never loses count of its state, and keeps serving', async () => {
    const triton = await start((t) =>
      t.bind({
        modelName: 'chaos',
        inferFunc: (requests: Request[]) =>
          requests.map((r) => {
            const sum = (r.inputs.INPUT!.data as Int32Array)[0]! + (r.inputs.S!.data as Int32Array)[0]!;
            return { OUTPUT: { shape: [1, 1], data: Int32Array.of(sum) }, S_OUT: { shape: [1, 1], data: Int32Array.of(sum) } };
          }),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: { maxBatchSize: 2, sequenceBatching: { direct: {}, maxSequenceIdleMicroseconds: 50_000, state: [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }] } },
      }),
    );
    // mulberry32: a small seeded generator, so that a failure replays.
    let seed = 20251126;
    const rand = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * n | 0;
    };
    const ids: unknown[] = [1, 2, 3, 'a', 'b', 0, '', -1, 1.5, true, null, { x: 1 }, 2 ** 64];
    const flags: unknown[] = [true, false, undefined, 'yes', 1];
    const statuses = new Set<number>();
    for (let round = 0; round < 20; round++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => {
          const parameters: Record<string, unknown> = {};
          const id = ids[rand(ids.length)];
          if (rand(8) > 0) parameters.sequence_id = id;
          const start = flags[rand(flags.length)];
          const end = flags[rand(flags.length)];
          if (start !== undefined) parameters.sequence_start = start;
          if (end !== undefined) parameters.sequence_end = end;
          return infer(triton, 'chaos', rand(100), parameters);
        }),
      );
      for (const a of answers) statuses.add(a.status);
    }
    expect([...statuses].filter((s) => s !== 200 && s !== 400)).toEqual([]);
    expect(statuses.has(200)).toBe(true);
    const batcher = batcherOf(triton, 'chaos');
    while (batcher.liveSequences > 0) await new Promise((r) => setTimeout(r, 20));
    const { created, released } = batcher.stateBuffers;
    expect(created).toBe(released);
    expect(await runSequence(triton, 'after', [4, 5, 6], 'chaos')).toEqual([4, 9, 15]);
  });

  it('worker instances, direct strategy: 12 concurrent sequences over two workers get their running sums', async () => {
    const triton = await start((t) =>
      t.bind({
        modelName: 'wdirect',
        inferFunc: workers({ module: path.join(__dirname, '../fixtures/workers/sequence-model.js'), devices: ['cpu', 'cpu'] }),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [
          { name: 'OUTPUT', dtype: 'INT32', shape: [1] },
          { name: 'SEQ', dtype: 'BYTES', shape: [1] },
          { name: 'THREAD', dtype: 'INT32', shape: [1] },
        ],
        config: { maxBatchSize: 4, sequenceBatching: { direct: {}, maxSequenceIdleMicroseconds: NO_IDLE_REAP, state: [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }] } },
      }),
    );
    const sequences = Array.from({ length: 12 }, (_, s) => Array.from({ length: 1 + ((s * 5) % 17) }, (_, i) => s * 3 + i));
    const results = await Promise.all(sequences.map((values, s) => runSequence(triton, `w${s}`, values, 'wdirect')));
    results.forEach((sums, s) => expect(sums).toEqual(runningSums(sequences[s] as number[])));
    const batcher = batcherOf(triton, 'wdirect');
    expect(batcher.stateBuffers).toEqual({ created: 12, released: 12 });
  });

  it('a model that calls a sequence model (BLS) passes its own request.sequence on', async () => {
    const triton = await start((t) => {
      bindSequenceAccumulate(t);
      t.bind({
        modelName: 'caller',
        inferFunc: (requests: Request[]) =>
          Promise.all(
            requests.map(async (r) => {
              const out = await r.infer!({ modelName: 'sequence_accumulate', inputs: { INPUT: r.inputs.INPUT! }, ...(r.sequence && { sequence: r.sequence }) });
              return { OUTPUT: out.OUTPUT! };
            }),
          ),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: { maxBatchSize: 8 },
      });
    });
    expect(await runSequence(triton, 'via-caller', [3, 4, 5], 'caller')).toEqual([3, 7, 12]);
    const without = await infer(triton, 'caller', 1, {});
    expect(without.status).toBe(400);
    expect(without.body.error).toBe("model 'caller' calling 'sequence_accumulate': inference request to model 'sequence_accumulate' must specify a non-zero or non-empty correlation ID");
  });

  it("an ensemble hands its request's correlation id and flags to a sequence step, as Triton does", async () => {
    const triton = await start((t) => {
      bindSequenceAccumulate(t);
      t.bind({
        modelName: 'acc_ensemble',
        inferFunc: ensemble({ steps: [{ modelName: 'sequence_accumulate', inputMap: { INPUT: 'INPUT' }, outputMap: { OUTPUT: 'OUTPUT' } }] }),
        inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
        outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
        config: { maxBatchSize: 8 },
      });
    });
    expect(await runSequence(triton, 77, [10, -3, 1], 'acc_ensemble')).toEqual([10, 7, 8]);
  });
});
