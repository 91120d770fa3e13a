import { ModelConfig, formatModelConfigText, parseModelConfigText, type ModelConfigJson } from '../../../lib/config';
import { buildModelConfigJson } from '../../../lib/config/triton-model-config';
import { nameSpecs } from '../../../lib/config/tensor-spec';
import { TritonError } from '../../../lib/base/errors';

const REALISTIC = `
# A classifier on ONNX Runtime with most of what Triton's model configuration offers.
name: "resnet50"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { specific: { versions: [1, 3] } }
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    format: FORMAT_NCHW
    dims: [ 3, 224, 224 ]
    reshape: { shape: [ 1, 3, 224, 224 ] }
  },
  {
    name: "MASK"
    data_type: TYPE_BOOL
    dims: [ -1 ]
    optional: true
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ 1000 ]
    label_filename: "labels.txt"
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
  preserve_ordering: true
  priority_levels: 3
  default_priority_level: 2
  default_queue_policy {
    timeout_action: REJECT
    default_timeout_microseconds: 1000000
    allow_timeout_override: true
    max_queue_size: 16
  }
  priority_queue_policy {
    key: 1
    value: { timeout_action: DELAY, max_queue_size: 4 }
  }
  priority_queue_policy { key: 3 value { default_timeout_microseconds: 500 } }
}
instance_group [
  { name: "resnet50_gpu" kind: KIND_GPU count: 2 gpus: [ 0, 1 ] },
  { kind: KIND_CPU count: 1 }
]
parameters: { key: "EXECUTION_ENV_PATH", value: { string_value: "$$TRITON_MODEL_DIRECTORY/env.tar.gz" } }
parameters { key: "mode" value { string_value: "fast" } }
model_warmup [
  {
    name: "zeros"
    batch_size: 8
    inputs {
      key: "INPUT0"
      value: { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] zero_data: true }
    }
    count: 2
  },
  {
    name: "random"
    batch_size: 1
    inputs { key: "INPUT0" value { data_type: TYPE_FP32 dims: [ 3, 224, 224 ] random_data: true } }
    inputs { key: "MASK" value { data_type: TYPE_BOOL dims: [ 1 ] input_data_file: "mask.bin" } }
  }
]
optimization {
  execution_accelerators {
    gpu_execution_accelerator : [ {
      name : "tensorrt"
      parameters { key: "precision_mode" value: "FP16" }
      parameters { key: "max_workspace_size_bytes" value: "1073741824" }
    }, { name: "cuda" } ]
    cpu_execution_accelerator: [ { name: "openvino" } ]
  }
  input_pinned_memory { enable: false }
  priority: PRIORITY_MAX
}
response_cache { enable: true }
model_transaction_policy { decoupled: False }
`;

const REALISTIC_JSON: ModelConfigJson = {
  name: 'resnet50',
  platform: 'onnxruntime_onnx',
  max_batch_size: 8,
  version_policy: { specific: { versions: [1, 3] } },
  input: [
    { name: 'INPUT0', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: [3, 224, 224], reshape: { shape: [1, 3, 224, 224] } },
    { name: 'MASK', data_type: 'TYPE_BOOL', dims: [-1], optional: true },
  ],
  output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [1000], label_filename: 'labels.txt' }],
  dynamic_batching: {
    preferred_batch_size: [4, 8],
    max_queue_delay_microseconds: 100,
    preserve_ordering: true,
    priority_levels: 3,
    default_priority_level: 2,
    default_queue_policy: { timeout_action: 'REJECT', default_timeout_microseconds: 1000000, allow_timeout_override: true, max_queue_size: 16 },
    priority_queue_policy: { '1': { timeout_action: 'DELAY', max_queue_size: 4 }, '3': { default_timeout_microseconds: 500 } },
  },
  instance_group: [
    { name: 'resnet50_gpu', kind: 'KIND_GPU', count: 2, gpus: [0, 1] },
    { kind: 'KIND_CPU', count: 1 },
  ],
  parameters: { EXECUTION_ENV_PATH: { string_value: '$$TRITON_MODEL_DIRECTORY/env.tar.gz' }, mode: { string_value: 'fast' } },
  model_warmup: [
    { name: 'zeros', batch_size: 8, inputs: { INPUT0: { data_type: 'TYPE_FP32', dims: [3, 224, 224], zero_data: true } }, count: 2 },
    {
      name: 'random',
      batch_size: 1,
      inputs: {
        INPUT0: { data_type: 'TYPE_FP32', dims: [3, 224, 224], random_data: true },
        MASK: { data_type: 'TYPE_BOOL', dims: [1], input_data_file: 'mask.bin' },
      },
    },
  ],
  optimization: {
    execution_accelerators: {
      gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16', max_workspace_size_bytes: '1073741824' } }, { name: 'cuda' }],
      cpu_execution_accelerator: [{ name: 'openvino' }],
    },
    input_pinned_memory: { enable: false },
    priority: 'PRIORITY_MAX',
  },
  response_cache: { enable: true },
  model_transaction_policy: { decoupled: false },
};

const ENSEMBLE = `
name: "ensemble_model"
platform: "ensemble"
max_batch_size: 1
input [ { name: "IMAGE" data_type: TYPE_STRING dims: [ 1 ] } ]
output [
  { name: "CLASSIFICATION" data_type: TYPE_FP32 dims: [ 1000 ] },
  { name: "SEGMENTATION" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] }
]
ensemble_scheduling {
  max_inflight_requests: 16
  step [
    {
      model_name: "image_preprocess_model"
      model_version: -1
      input_map { key: "RAW_IMAGE", value: "IMAGE" }
      output_map { key: "PREPROCESSED_OUTPUT" value: "preprocessed_image" }
    },
    {
      model_name: "classification_model"
      model_version: 2
      input_map { key: "FORMATTED_IMAGE" value: "preprocessed_image" }
      output_map { key: "CLASSIFICATION_OUTPUT" value: "CLASSIFICATION" }
    },
    {
      model_name: "segmentation_model"
      model_namespace: "vision"
      input_map { key: "FORMATTED_IMAGE" value: "preprocessed_image" }
      input_map { key: "SCALE" value: "IMAGE" }
      output_map { key: "SEGMENTATION_OUTPUT" value: "SEGMENTATION" }
    }
  ]
}
`;

const ENSEMBLE_JSON: ModelConfigJson = {
  name: 'ensemble_model',
  platform: 'ensemble',
  max_batch_size: 1,
  input: [{ name: 'IMAGE', data_type: 'TYPE_STRING', dims: [1] }],
  output: [
    { name: 'CLASSIFICATION', data_type: 'TYPE_FP32', dims: [1000] },
    { name: 'SEGMENTATION', data_type: 'TYPE_FP32', dims: [3, 224, 224] },
  ],
  ensemble_scheduling: {
    max_inflight_requests: 16,
    step: [
      { model_name: 'image_preprocess_model', model_version: -1, input_map: { RAW_IMAGE: 'IMAGE' }, output_map: { PREPROCESSED_OUTPUT: 'preprocessed_image' } },
      { model_name: 'classification_model', model_version: 2, input_map: { FORMATTED_IMAGE: 'preprocessed_image' }, output_map: { CLASSIFICATION_OUTPUT: 'CLASSIFICATION' } },
      {
        model_name: 'segmentation_model',
        model_namespace: 'vision',
        input_map: { FORMATTED_IMAGE: 'preprocessed_image', SCALE: 'IMAGE' },
        output_map: { SEGMENTATION_OUTPUT: 'SEGMENTATION' },
      },
    ],
  },
};

const parse = (text: string): ModelConfigJson => parseModelConfigText(text, 'config.pbtxt');

/** The error `parse(text)` throws (it must throw a TritonError). */
function parseError(text: string): TritonError {
  try {
    parse(text);
  } catch (err) {
    expect(err).toBeInstanceOf(TritonError);
    return err as TritonError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be refused`);
}

/** Formats, parses back, and checks that the result is what it started from. */
function expectRoundTrip(json: ModelConfigJson): void {
  expect(parse(formatModelConfigText(json))).toEqual(json);
}

describe('parseModelConfigText grammar', () => {
  it.each<[string, string, ModelConfigJson]>([
    ['a string scalar', 'name: "m"', { name: 'm' }],
    ['a comment to the end of the line', '# header\nname: "m" # trailing\n# footer', { name: 'm' }],
    ['a message in braces', 'response_cache { enable: true }', { response_cache: { enable: true } }],
    ['a message after a colon', 'response_cache: { enable: true }', { response_cache: { enable: true } }],
    ['a message in angle brackets', 'response_cache < enable: true >', { response_cache: { enable: true } }],
    ['an empty message', 'dynamic_batching { }', { dynamic_batching: {} }],
    ['a comma or semicolon after any field', 'name: "m", max_batch_size: 4; response_cache { enable: true; },', { name: 'm', max_batch_size: 4, response_cache: { enable: true } }],
    ['a repeated scalar given several times', 'input { dims: 1 dims: 2 dims: [3] }', { input: [{ dims: [1, 2, 3] }] }],
    ['a list of scalars', 'input { dims: [ -1, 3, 224 ] }', { input: [{ dims: [-1, 3, 224] }] }],
    ['a list of messages', 'input [ { name: "a" }, < name: "b" > ]', { input: [{ name: 'a' }, { name: 'b' }] }],
    ['a list of messages after a colon', 'input: [ { name: "a" } ]', { input: [{ name: 'a' }] }],
    ['a repeated message given several times', 'input { name: "a" } input: { name: "b" }', { input: [{ name: 'a' }, { name: 'b' }] }],
    ['an empty list, which sets nothing', 'input { dims: [] } output: []', { input: [{}] }],
    ['single-quoted strings', "name: 'm'", { name: 'm' }],
    ['adjacent strings, concatenated', 'name: "a" \'b\'\n  "c"', { name: 'abc' }],
    ['C escapes', String.raw`name: "q\"s\'b\\n\nt\tr\ra\ab\bf\fv\v?\?"`, { name: `q"s'b\\n\nt\tr\ra\x07b\bf\fv\v??` }],
    ['hex and octal escapes', String.raw`name: "\x41\x4a\101\60\0"`, { name: 'AJA0\0' }],
    ['escapes of UTF-8 bytes and Unicode code points', String.raw`name: "\303\251 \xc3\xa9 \u00e9 \U0001F600"`, { name: 'é é é 😀' }],
    ['raw UTF-8', 'name: "modèle 模型"', { name: 'modèle 模型' }],
    ['decimal, negative, hex and octal integers', 'input { dims: [10, -1, 0x1F, 017, 0] }', { input: [{ dims: [10, -1, 31, 15, 0] }] }],
    ['a negative sign apart from its number', 'input { dims: - 1 }', { input: [{ dims: [-1] }] }],
    ['64-bit integers up to MAX_SAFE_INTEGER', 'dynamic_batching { max_queue_delay_microseconds: 9007199254740991 }', { dynamic_batching: { max_queue_delay_microseconds: 9007199254740991 } }],
    [
      'floats in every spelling',
      'sequence_batching { control_input { control { fp32_false_true: [1, 1.5, .5, 2., 1e-3, 2.5E+2, 1.5f, 3F, -0.25] } } }',
      { sequence_batching: { control_input: [{ control: [{ fp32_false_true: [1, 1.5, 0.5, 2, 0.001, 250, 1.5, 3, -0.25] }] }] } },
    ],
    [
      'infinities and NaN, any case',
      'sequence_batching { control_input { control { fp32_false_true: [inf, -inf, Infinity, -INF, nan, NaN] } } }',
      { sequence_batching: { control_input: [{ control: [{ fp32_false_true: [Infinity, -Infinity, Infinity, -Infinity, NaN, NaN] }] }] } },
    ],
    [
      'bools in every spelling',
      'sequence_batching { control_input { control { bool_false_true: [true, false, True, False, t, f, 1, 0] } } }',
      { sequence_batching: { control_input: [{ control: [{ bool_false_true: [true, false, true, false, true, false, true, false] }] }] } },
    ],
    ['an enum by name', 'input { data_type: TYPE_FP32 format: FORMAT_NCHW }', { input: [{ data_type: 'TYPE_FP32', format: 'FORMAT_NCHW' }] }],
    ['an enum by number', 'input { data_type: 11 format: 0x2 } instance_group { kind: 0 }', { input: [{ data_type: 'TYPE_FP32', format: 'FORMAT_NCHW' }], instance_group: [{ kind: 'KIND_AUTO' }] }],
    ['a string map', 'ensemble_scheduling { step { input_map { key: "a" value: "x" } input_map: { key: "b", value: "y" } } }', { ensemble_scheduling: { step: [{ input_map: { a: 'x', b: 'y' } }] } }],
    ['a map in list syntax', 'metric_tags [ { key: "a" value: "1" }, { key: "b" value: "2" } ]', { metric_tags: { a: '1', b: '2' } }],
    ['a map with a later entry for the same key', 'metric_tags { key: "a" value: "1" } metric_tags { key: "a" value: "2" }', { metric_tags: { a: '2' } }],
    ['a map entry without key or value', 'metric_tags { value: "v" } parameters { key: "p" }', { metric_tags: { '': 'v' }, parameters: { p: {} } }],
    ['a map with integer keys', 'dynamic_batching { priority_queue_policy { key: 0x2 value { max_queue_size: 3 } } }', { dynamic_batching: { priority_queue_policy: { '2': { max_queue_size: 3 } } } }],
    ['a oneof member under its own name', 'version_policy { latest { num_versions: 2 } }', { version_policy: { latest: { num_versions: 2 } } }],
    ['a scalar oneof member', 'model_warmup { inputs { key: "x" value { random_data: true } } }', { model_warmup: [{ inputs: { x: { random_data: true } } }] }],
    ['fields at their defaults, kept as written', 'max_batch_size: 0 name: "" input { optional: false }', { max_batch_size: 0, name: '', input: [{ optional: false }] }],
    ['an empty text', '  # nothing here\n', {}],
  ])('reads %s', (_name, text, expected) => {
    expect(parse(text)).toEqual(expected);
  });

  it('keeps a map key named __proto__ as an entry', () => {
    const json = parse('metric_tags { key: "__proto__" value: "x" } metric_tags { key: "constructor" value: "y" }');
    expect(Object.getPrototypeOf(json.metric_tags)).toBe(Object.prototype);
    expect(Object.entries(json.metric_tags as object)).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
    ]);
    expect(formatModelConfigText(json)).toContain('key: "__proto__"\n  value: "x"');
  });

  it('reads a realistic Triton config', () => {
    expect(parse(REALISTIC)).toEqual(REALISTIC_JSON);
  });

  it('reads an ensemble', () => {
    expect(parse(ENSEMBLE)).toEqual(ENSEMBLE_JSON);
  });

  it.each([
    ['version_policy: { all { }}', { all: {} }],
    ['version_policy: { latest: { num_versions: 2}}', { latest: { num_versions: 2 } }],
    ['version_policy: { specific: { versions: [1,3]}}', { specific: { versions: [1, 3] } }],
  ])('reads the version policy %s', (text, policy) => {
    expect(parse(text)).toEqual({ version_policy: policy });
  });
});

describe('parseModelConfigText errors', () => {
  it.each([
    ['an unknown field', 'name: "m"\n\n\n  max_batch: 1', "config.pbtxt:4:3: unknown field 'max_batch' in inference.ModelConfig"],
    ['an unknown field in a nested message', 'input {\n  nme: "a"\n}', "config.pbtxt:2:3: unknown field 'nme' in inference.ModelInput"],
    ['a field by its JSON name', 'maxBatchSize: 1', "config.pbtxt:1:1: unknown field 'maxBatchSize' in inference.ModelConfig"],
    ['a string for an integer', 'max_batch_size: "abc"', `config.pbtxt:1:17: field 'max_batch_size' expects an integer, got "abc"`],
    ['a float for an integer', 'max_batch_size: 1.5', "config.pbtxt:1:17: field 'max_batch_size' expects an integer, got 1.5"],
    ['a malformed number', 'max_batch_size: 12abc', "config.pbtxt:1:17: field 'max_batch_size' expects an integer, got 12abc"],
    ['a digit 8 in an octal integer', 'max_batch_size: 018', "config.pbtxt:1:17: field 'max_batch_size' expects an integer, got 018"],
    ['an int32 out of range', 'max_batch_size: 2147483648', "config.pbtxt:1:17: field 'max_batch_size' value 2147483648 is out of range for int32"],
    ['a negative uint32', 'response_cache {}\noptimization { gather_kernel_buffer_threshold: -1 }', "config.pbtxt:2:48: field 'gather_kernel_buffer_threshold' value -1 is out of range for uint32"],
    ['a uint64 beyond 64 bits', 'dynamic_batching { priority_levels: 18446744073709551616 }', "config.pbtxt:1:37: field 'priority_levels' value 18446744073709551616 is out of range for uint64"],
    [
      'a 64-bit value beyond MAX_SAFE_INTEGER',
      'dynamic_batching {\n  max_queue_delay_microseconds: 9007199254740993\n}',
      "config.pbtxt:2:33: field 'max_queue_delay_microseconds' value 9007199254740993 is beyond Number.MAX_SAFE_INTEGER and cannot be held exactly",
    ],
    ['a word for a float', 'sequence_batching { direct { minimum_slot_utilization: half } }', "config.pbtxt:1:56: field 'minimum_slot_utilization' expects a number, got half"],
    ['a hex float', 'sequence_batching { direct { minimum_slot_utilization: 0x1 } }', "config.pbtxt:1:56: field 'minimum_slot_utilization' expects a number, got 0x1"],
    ['a word for a bool', 'response_cache { enable: yes }', "config.pbtxt:1:26: field 'enable' expects a boolean, got yes"],
    ['a quoted bool', 'response_cache { enable: "true" }', `config.pbtxt:1:26: field 'enable' expects a boolean, got "true"`],
    ['a number for a string', 'name: 5', "config.pbtxt:1:7: field 'name' expects a string, got 5"],
    ['an unknown enum name', 'input {\n  data_type: TYPE_FP33\n}', "config.pbtxt:2:14: unknown enum value 'TYPE_FP33' for field 'data_type' (inference.DataType)"],
    ['an unknown enum number', 'input { data_type: 42 }', "config.pbtxt:1:20: unknown enum value 42 for field 'data_type' (inference.DataType)"],
    ['a quoted enum', 'input { data_type: "TYPE_FP32" }', `config.pbtxt:1:20: field 'data_type' expects a value of inference.DataType, got "TYPE_FP32"`],
    ['an enum of another type', 'instance_group { kind: TYPE_FP32 }', "config.pbtxt:1:24: unknown enum value 'TYPE_FP32' for field 'kind' (inference.ModelInstanceGroup.Kind)"],
    ['a message left open', 'input {\n  name: "a"', "config.pbtxt:2:12: expected '}' to close 'input', got end of file"],
    ['a message closed by the wrong bracket', 'input < name: "a" }', "config.pbtxt:1:19: expected a field name or '>' to close 'input', got '}'"],
    ['a stray closing brace', 'name: "m" }', "config.pbtxt:1:11: expected a field name, got '}'"],
    ['a missing colon before a scalar', 'name "m"', `config.pbtxt:1:6: expected ':' after field 'name', got "m"`],
    ['a scalar for a message', 'response_cache: true', "config.pbtxt:1:17: expected '{' or '<' to open 'response_cache' (inference.ModelResponseCache), got true"],
    ['a list for a non-repeated field', 'name: ["a"]', "config.pbtxt:1:7: field 'name' expects a string, got '['"],
    ['a list without its comma', 'input { dims: [1 2] }', "config.pbtxt:1:18: expected ',' or ']' in the list of 'dims', got 2"],
    ['a list left open', 'input { dims: [1, 2', "config.pbtxt:1:20: expected ',' or ']' in the list of 'dims', got end of file"],
    ['a non-repeated field given twice', 'name: "a"\nname: "b"', "config.pbtxt:2:1: field 'name' given twice in inference.ModelConfig"],
    ['a nested field given twice', 'dynamic_batching { preserve_ordering: true preserve_ordering: false }', "config.pbtxt:1:44: field 'preserve_ordering' given twice in inference.ModelDynamicBatching"],
    [
      'two members of a oneof',
      'version_policy { latest { num_versions: 1 } all {} }',
      "config.pbtxt:1:45: field 'all' cannot be set with 'latest': both belong to oneof 'policy_choice' of inference.ModelVersionPolicy",
    ],
    [
      'two schedulers',
      'dynamic_batching {}\nsequence_batching {}',
      "config.pbtxt:2:1: field 'sequence_batching' cannot be set with 'dynamic_batching': both belong to oneof 'scheduling_choice' of inference.ModelConfig",
    ],
    ['a map entry with an unknown field', 'parameters { key: "a" val: "b" }', "config.pbtxt:1:23: unknown field 'val' in parameters entry"],
    ['a map value of the wrong type', 'parameters { key: "a" value: "b" }', `config.pbtxt:1:30: expected '{' or '<' to open 'value' (inference.ModelParameter), got "b"`],
    ['an unterminated string', 'name: "abc\nplatform: "x"', 'config.pbtxt:1:7: unterminated string'],
    ['an invalid escape', 'name: "a\\qb"', "config.pbtxt:1:9: invalid escape '\\q' in string"],
    ['an octal escape beyond a byte', 'name: "\\777"', "config.pbtxt:1:8: octal escape '\\777' is beyond a byte"],
    ['bytes that are not UTF-8', 'name: "\\xff"', `config.pbtxt:1:7: field 'name' expects a string, got invalid UTF-8 in "\\xff"`],
    ['an unexpected character', 'name: "m"\n@', "config.pbtxt:2:1: unexpected character '@'"],
    ['an extension name', '[ext.field]: 1', "config.pbtxt:1:1: expected a field name, got '['"],
  ])('refuses %s', (_name, text, message) => {
    const err = parseError(text);
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.message).toBe(message);
  });

  it('prefixes messages with the file name it is given', () => {
    expect(() => parseModelConfigText('x: 1', 'models/m/config.pbtxt')).toThrow(/^models\/m\/config\.pbtxt:1:1: unknown field 'x'/);
  });
});

describe('formatModelConfigText', () => {
  it('writes two-space indented text in the order of the keys', () => {
    const text = formatModelConfigText({
      name: 'm',
      max_batch_size: 4,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [-1, 3] }],
      version_policy: { all: {} },
      parameters: { k: { string_value: 'a"b\\c\n' } },
      dynamic_batching: { priority_queue_policy: { '1': { timeout_action: 'DELAY' } } },
    });
    expect(text).toBe(
      [
        'name: "m"',
        'max_batch_size: 4',
        'input {',
        '  name: "x"',
        '  data_type: TYPE_FP32',
        '  dims: -1',
        '  dims: 3',
        '}',
        'version_policy {',
        '  all {}',
        '}',
        'parameters {',
        '  key: "k"',
        '  value {',
        '    string_value: "a\\"b\\\\c\\n"',
        '  }',
        '}',
        'dynamic_batching {',
        '  priority_queue_policy {',
        '    key: 1',
        '    value {',
        '      timeout_action: DELAY',
        '    }',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('writes nothing for empty lists and maps', () => {
    expect(formatModelConfigText({ name: 'm', input: [], parameters: {}, metric_tags: {} })).toBe('name: "m"\n');
    expect(formatModelConfigText({})).toBe('');
  });

  it.each<[string, ModelConfigJson]>([
    ['the realistic config', parse(REALISTIC)],
    ['the ensemble', parse(ENSEMBLE)],
    ['control characters and Unicode in strings', { name: 'a\u0001\u007f\t\r\n"\'\\é😀', metric_tags: { 'k"ey\n': 'v\u0000' } }],
    ['special floats', { sequence_batching: { control_input: [{ control: [{ fp32_false_true: [Infinity, -Infinity, NaN, -0, 1e-7, 1.5e300, 0.1] }] }] } }],
    ['scalar oneof members and defaults', { max_batch_size: 0, name: '', model_warmup: [{ name: 'w', inputs: { x: { zero_data: false } } }], version_policy: { all: {} } }],
    ['64-bit integers', { dynamic_batching: { max_queue_delay_microseconds: Number.MAX_SAFE_INTEGER, priority_queue_policy: { '9007199254740991': {} } } }],
  ])('round-trips %s', (_name, json) => {
    expectRoundTrip(json);
  });

  it('accepts enums given by number and 64-bit integers given as strings', () => {
    expect(parse(formatModelConfigText({ input: [{ data_type: 11, dims: ['-1', 3] }] }))).toEqual({ input: [{ data_type: 'TYPE_FP32', dims: [-1, 3] }] });
  });

  it('writes the complete JSON of buildModelConfigJson, which reads back the same', () => {
    const config = new ModelConfig({
      maxBatchSize: 16,
      batcher: { maxQueueDelayMicroseconds: 100, preferredBatchSize: [4, 8], priorityLevels: 2, defaultPriorityLevel: 1, priorityQueuePolicy: { 2: { maxQueueSize: 3 } } },
      parameters: { origin: 'test' },
      warmup: [{ name: 'w', batchSize: 2, inputs: { a: { dtype: 'FP32', dims: [4] } } }],
      decoupled: true,
    });
    const json = buildModelConfigJson({
      name: 'add_sub',
      platform: '',
      backend: 'tstriton',
      inputs: nameSpecs([{ name: 'a', dtype: 'FP32', shape: [-1] }, { dtype: 'BYTES', shape: [2, 3], optional: true }], 'INPUT'),
      outputs: nameSpecs([{ name: 'add', dtype: 'FP32', shape: [-1] }], 'OUTPUT'),
      config,
      instanceGroups: [{ kind: 'KIND_GPU', count: 2, gpus: [0, 1] }],
    });
    const text = formatModelConfigText(json);
    expect(text).toContain('runtime: ""\n');
    expect(text).not.toMatch(/batch_input|cc_model_filenames|secondary_devices/);
    expect(parse(text)).toEqual(withoutEmpty(json));
  });

  it.each<[string, ModelConfigJson, string]>([
    ['an unknown key', { name: 'm', max_batch: 1 }, "cannot write config.pbtxt: unknown field 'max_batch' in inference.ModelConfig"],
    ['an unknown nested key', { input: [{ nme: 'a' }] }, "cannot write config.pbtxt: unknown field 'input[0].nme' in inference.ModelInput"],
    ['an unknown enum name', { input: [{ data_type: 'TYPE_FP33' }] }, `cannot write config.pbtxt: field 'input[0].data_type' expects a value of inference.DataType, got "TYPE_FP33"`],
    ['a fraction for an integer', { max_batch_size: 1.5 }, "cannot write config.pbtxt: field 'max_batch_size' expects an integer, got 1.5"],
    ['an integer out of range', { max_batch_size: 2 ** 31 }, "cannot write config.pbtxt: field 'max_batch_size' value 2147483648 is out of range for int32"],
    ['a scalar for a message', { response_cache: true }, "cannot write config.pbtxt: field 'response_cache' expects an object (inference.ModelResponseCache), got true"],
    ['a scalar for a list', { input: { name: 'a' } }, `cannot write config.pbtxt: field 'input' is repeated and expects an array, got {"name":"a"}`],
    ['a bad map key', { dynamic_batching: { priority_queue_policy: { one: {} } } }, `cannot write config.pbtxt: map 'dynamic_batching.priority_queue_policy["one"]' has uint64 keys, got "one"`],
    ['a number for a string', { name: 5 }, "cannot write config.pbtxt: field 'name' expects a string, got 5"],
  ])('refuses %s', (_name, json, message) => {
    expect(() => formatModelConfigText(json)).toThrow(new TritonError('INVALID_CONFIG', message));
  });
});

/** `json` without empty arrays and objects standing for maps, which the text format cannot tell from absent. */
function withoutEmpty(json: ModelConfigJson): ModelConfigJson {
  const strip = (value: unknown, isMapLike: boolean): unknown => {
    if (Array.isArray(value)) return value.map((v) => strip(v, false));
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (Array.isArray(v) && v.length === 0) continue;
      if (MAP_FIELDS.has(k) && !isMapLike && typeof v === 'object' && v !== null && Object.keys(v).length === 0) continue;
      out[k] = strip(v, MAP_FIELDS.has(k));
    }
    return out;
  };
  return strip(json, false) as ModelConfigJson;
}

const MAP_FIELDS = new Set(['parameters', 'cc_model_filenames', 'metric_tags', 'priority_queue_policy', 'inputs', 'input_map', 'output_map']);
