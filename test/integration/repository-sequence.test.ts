import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Triton } from '../../lib';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const ACCUMULATE = path.join(__dirname, '../fixtures/repository/accumulate_model.ts');

describe('a model repository with sequence_batching and ragged batching in config.pbtxt', () => {
  let root: string;
  let triton: Triton | undefined;

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-seq-repo-'));
  });

  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
    fs.rmSync(root, { recursive: true, force: true });
  });

  const write = (rel: string, content: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), content);
  };

  async function start(): Promise<string> {
    triton = track(loopbackTriton({ modelRepository: [root] }));
    await triton.run();
    return `http://127.0.0.1:${triton.ports.http}`;
  }

  it('serves a script model with sequence_batching, its controls and an initial state from initial_state/', async () => {
    write('acc/1/model.ts', fs.readFileSync(ACCUMULATE));
    write('acc/initial_state/s.bin', Buffer.from(Int32Array.of(1000).buffer));
    write(
      'acc/config.pbtxt',
      [
        'backend: "tstriton"',
        'max_batch_size: 4',
        'input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] } ]',
        'output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "FLAG" data_type: TYPE_INT32 dims: [ 1 ] } ]',
        'sequence_batching {',
        '  max_sequence_idle_microseconds: 5000000',
        '  oldest { max_candidate_sequences: 4 }',
        '  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]',
        '  state [ { input_name: "S" output_name: "S_OUT" data_type: TYPE_INT32 dims: [ 1 ]',
        '            initial_state [ { name: "init" data_type: TYPE_INT32 dims: [ 1 ] data_file: "s.bin" } ] } ]',
        '}',
      ].join('\n'),
    );
    const base = await start();
    const send = (value: number, parameters: Record<string, unknown>) =>
      fetch(`${base}/v2/models/acc/infer`, { method: 'POST', body: JSON.stringify({ parameters, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [value] }] }) }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as { outputs?: { data: number[] }[]; error?: string } }),
      );
    // The state starts from initial_state/s.bin (1000); START is 1 on the first request only.
    const data = (a: { body: { outputs?: { data: number[] }[] } }) => a.body.outputs?.map((o) => o.data[0]);
    expect(data(await send(2, { sequence_id: 5, sequence_start: true }))).toEqual([1002, 1]);
    expect(data(await send(3, { sequence_id: 5 }))).toEqual([1005, 0]);
    expect(data(await send(4, { sequence_id: 5, sequence_end: true }))).toEqual([1009, 0]);
    const missing = await send(1, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("inference request to model 'acc' must specify a non-zero or non-empty correlation ID");
    const config = (await fetch(`${base}/v2/models/acc/config`).then((r) => r.json())) as { sequence_batching: { oldest: unknown; state: { initial_state: unknown[] }[] } };
    expect(config.sequence_batching.oldest).toEqual({ max_candidate_sequences: 4, preferred_batch_size: [4], max_queue_delay_microseconds: 0, preserve_ordering: false });
  });

  it('reads allow_ragged_batch, batch_input and batch_output', async () => {
    write('acc/1/model.ts', fs.readFileSync(ACCUMULATE));
    write(
      'acc/config.pbtxt',
      [
        'backend: "tstriton"',
        'max_batch_size: 4',
        'input [ { name: "INPUT" data_type: TYPE_INT32 dims: [ -1 ] allow_ragged_batch: true } ]',
        'output [ { name: "OUTPUT" data_type: TYPE_INT32 dims: [ -1 ] } ]',
        'batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: "INDEX" data_type: TYPE_INT32 source_input: "INPUT" } ]',
        'batch_output [ { target_name: "OUTPUT" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "INPUT" } ]',
        'dynamic_batching { }',
      ].join('\n'),
    );
    const base = await start();
    const config = (await fetch(`${base}/v2/models/acc/config`).then((r) => r.json())) as Record<string, unknown>;
    expect((config.input as { allow_ragged_batch: boolean }[])[0]?.allow_ragged_batch).toBe(true);
    expect(config.batch_input).toEqual([{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', target_name: ['INDEX'], data_type: 'TYPE_INT32', source_input: ['INPUT'] }]);
    expect(config.batch_output).toEqual([{ target_name: ['OUTPUT'], kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', source_input: ['INPUT'] }]);
  });
});
