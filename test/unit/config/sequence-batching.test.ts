import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfig, toPbtxt } from '../../../lib/config';
import { buildModelConfigJson } from '../../../lib/config/triton-model-config';
import { nameSpecs } from '../../../lib/config/tensor-spec';
import { TritonError } from '../../../lib/base/errors';

function configOf(config: ModelConfig) {
  return buildModelConfigJson({
    name: 'seq',
    platform: '',
    backend: 'tstriton',
    inputs: nameSpecs([{ name: 'INPUT', dtype: 'INT32', shape: [1] }], 'INPUT'),
    outputs: nameSpecs([{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }], 'OUTPUT'),
    config,
    instanceGroups: [{ kind: 'KIND_CPU', count: 1, gpus: [] }],
  });
}

describe('sequence_batching in the generated config', () => {
  it('prints the oldest strategy, controls and state as Triton does, in place of dynamic_batching', () => {
    const json = configOf(
      new ModelConfig({
        maxBatchSize: 8,
        sequenceBatching: {
          oldest: { maxCandidateSequences: 8 },
          controlInput: [
            { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32FalseTrue: [0, 1] }] },
            { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'BYTES' }] },
          ],
          state: [{ inputName: 'INPUT_STATE', outputName: 'OUTPUT_STATE', dtype: 'INT32', dims: [1], initialState: [{ name: 'z', dtype: 'INT32', dims: [1], zeroData: true }] }],
        },
      }),
    );
    expect(json).not.toHaveProperty('dynamic_batching');
    expect(json.sequence_batching).toEqual({
      max_sequence_idle_microseconds: 1000000,
      control_input: [
        { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_INVALID' }] },
        { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_STRING' }] },
      ],
      oldest: { max_candidate_sequences: 8, preferred_batch_size: [8], max_queue_delay_microseconds: 0, preserve_ordering: false },
      state: [
        {
          input_name: 'INPUT_STATE',
          output_name: 'OUTPUT_STATE',
          data_type: 'TYPE_INT32',
          dims: [1],
          initial_state: [{ data_type: 'TYPE_INT32', dims: [1], zero_data: true, name: 'z' }],
          use_same_buffer_for_input_output: false,
          use_growable_memory: false,
        },
      ],
      iterative_sequence: false,
    });
    const text = toPbtxt(json);
    expect(text).toContain(
      [
        'sequence_batching {',
        '  max_sequence_idle_microseconds: 1000000',
        '  control_input {',
        '    name: "START"',
        '    control {',
        '      kind: CONTROL_SEQUENCE_START',
        '      int32_false_true: [ 0, 1 ]',
        '    }',
        '  }',
      ].join('\n'),
    );
    expect(text).toContain('      data_type: TYPE_STRING\n');
    expect(text).not.toContain('TYPE_INVALID');
    expect(text).toContain('  oldest {\n    max_candidate_sequences: 8\n    preferred_batch_size: [ 8 ]\n  }\n');
    expect(text).toContain('    input_name: "INPUT_STATE"\n    output_name: "OUTPUT_STATE"\n    data_type: TYPE_INT32\n    dims: [ 1 ]\n    initial_state {\n');
  });

  it('defaults to the direct strategy', () => {
    const json = configOf(new ModelConfig({ maxBatchSize: 4, sequenceBatching: { maxSequenceIdleMicroseconds: 5 } }));
    expect(json.sequence_batching).toMatchObject({ max_sequence_idle_microseconds: 5, direct: { max_queue_delay_microseconds: 0, minimum_slot_utilization: 0 } });
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['a decoupled model', { decoupled: true }, /a decoupled model cannot have a sequence batcher/],
    ['the response cache', { responseCache: true }, /cannot use the response cache/],
    ['warmup', { warmup: [{ name: 'w', inputs: { INPUT: { dtype: 'INT32', dims: [1] } } }] }, /takes no warmup/],
  ])('refuses a sequence batcher with %s at bind', (_what, init, message) => {
    expect(() => new ModelConfig({ ...init, sequenceBatching: {} })).toThrow(message);
  });

  it.each<[string, unknown, RegExp]>([
    ['both strategies', { direct: {}, oldest: {} }, /give one strategy/],
    ['a control without values', { controlInput: [{ name: 'S', control: [{ kind: 'CONTROL_SEQUENCE_START' }] }] }, /must give exactly one of int32FalseTrue/],
    ['a CORRID of FP32', { controlInput: [{ name: 'C', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'FP32' }] }] }, /dataType must be one of UINT64/],
    ['a control kind twice', { controlInput: [{ name: 'A', control: [{ kind: 'CONTROL_SEQUENCE_END', boolFalseTrue: [false, true] }] }, { name: 'B', control: [{ kind: 'CONTROL_SEQUENCE_END', boolFalseTrue: [false, true] }] }] }, /CONTROL_SEQUENCE_END is given more than once/],
    ['a state with a variable dim', { state: [{ inputName: 'I', outputName: 'O', dtype: 'FP32', dims: [-1] }] }, /dims must be positive integers/],
    ['an unknown field', { idle: 1 }, /unknown field "idle"/],
  ])('refuses %s at bind', (_what, init, message) => {
    let error: unknown;
    try {
      new ModelConfig({ sequenceBatching: init as never });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(TritonError);
    expect((error as TritonError).code).toBe('INVALID_CONFIG');
    expect((error as TritonError).message).toMatch(message);
  });
});

describe('golden configs of a sequence model and a ragged model (parsed with Triton protobuf by test/interop)', () => {
  const golden = (name: string) => fs.readFileSync(path.join(__dirname, 'golden', name), 'utf8');

  it('sequence: direct strategy with every control form and a state from a data file', () => {
    const json = configOf(
      new ModelConfig({
        maxBatchSize: 4,
        sequenceBatching: {
          direct: { maxQueueDelayMicroseconds: 100, minimumSlotUtilization: 0.5 },
          maxSequenceIdleMicroseconds: 3_000_000,
          controlInput: [
            { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', fp32FalseTrue: [0, 1] }] },
            { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', boolFalseTrue: [false, true] }] },
            { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32FalseTrue: [0, 1] }] },
            { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', dataType: 'UINT64' }] },
          ],
          state: [{ inputName: 'INPUT_STATE', outputName: 'OUTPUT_STATE', dtype: 'FP32', dims: [2, 3], initialState: [{ name: 'init', dtype: 'FP32', dims: [2, 3], dataFile: 'init.bin' }] }],
        },
      }),
    );
    expect(JSON.stringify(json, null, 2) + '\n').toBe(golden('sequence.json'));
    expect(toPbtxt(json)).toBe(golden('sequence.pbtxt'));
  });

  it('ragged: allow_ragged_batch, batch_input and batch_output', () => {
    const json = buildModelConfigJson({
      name: 'ragged',
      platform: '',
      backend: 'tstriton',
      inputs: nameSpecs([{ name: 'INPUT', dtype: 'FP32', shape: [-1], allowRaggedBatch: true }], 'INPUT'),
      outputs: nameSpecs([{ name: 'OUTPUT', dtype: 'FP32', shape: [-1] }], 'OUTPUT'),
      config: new ModelConfig({
        maxBatchSize: 16,
        batchInput: [
          { kind: 'BATCH_ELEMENT_COUNT', targetName: 'COUNT', dtype: 'INT32', sourceInput: 'INPUT' },
          { kind: 'BATCH_ITEM_SHAPE_FLATTEN', targetName: 'SHAPES', dtype: 'INT64', sourceInput: 'INPUT' },
        ],
        batchOutput: [{ kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', targetName: ['OUTPUT'], sourceInput: 'INPUT' }],
      }),
      instanceGroups: [{ kind: 'KIND_CPU', count: 1, gpus: [] }],
    });
    expect(JSON.stringify(json, null, 2) + '\n').toBe(golden('ragged.json'));
    expect(toPbtxt(json)).toBe(golden('ragged.pbtxt'));
  });

  it('refuses a batch input whose source is not an input, at bind', () => {
    expect(() =>
      configOf(new ModelConfig({ batchInput: [{ kind: 'BATCH_ELEMENT_COUNT', targetName: 'N', dtype: 'INT32', sourceInput: 'NOPE' }] })),
    ).toThrow("invalid ModelConfig: BATCH_ELEMENT_COUNT names source input 'NOPE', which model 'seq' does not have");
  });
});
