import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  DynamicBatcher,
  ModelConfig,
  QueuePolicy,
  TensorSpec,
  TritonConfig,
  toPbtxt,
} from '../../../lib/config';
import { buildModelConfigJson, type ModelDescription } from '../../../lib/config/triton-model-config';
import { nameSpecs } from '../../../lib/config/tensor-spec';
import { validateOrThrow } from '../../../lib/config/validate';
import { envName } from '../../../lib/config/triton-config';

const golden = (name: string) => fs.readFileSync(path.join(__dirname, 'golden', name), 'utf8');

function describeAddSub(config: ModelConfig): ModelDescription {
  return {
    name: 'add_sub',
    platform: '',
    backend: 'tstriton',
    inputs: nameSpecs([{ name: 'a', dtype: 'FP32', shape: [-1] }, { dtype: 'BYTES', shape: [2, 3], optional: true }], 'INPUT'),
    outputs: nameSpecs([{ name: 'add', dtype: 'FP32', shape: [-1] }], 'OUTPUT'),
    config,
    instanceGroups: [{ kind: 'KIND_CPU', count: 2, gpus: [] }],
  };
}

describe('model config generation', () => {
  it('matches the golden JSON for a batching model with a configured batcher', () => {
    const config = new ModelConfig({
      maxBatchSize: 16,
      batcher: { maxQueueDelayMicroseconds: 100, preferredBatchSize: [4, 8], defaultQueuePolicy: { maxQueueSize: 10, timeoutAction: 'DELAY' } },
      parameters: { origin: 'test' },
      warmup: [{ name: 'w', batchSize: 2, inputs: { a: { dtype: 'FP32', dims: [4] } } }],
    });
    const json = buildModelConfigJson(describeAddSub(config));
    expect(JSON.stringify(json, null, 2) + '\n').toBe(golden('batching.json'));
    expect(toPbtxt(json)).toBe(golden('batching.pbtxt'));
  });

  it('matches the golden JSON for a model that does not batch', () => {
    const config = new ModelConfig({ batching: false, decoupled: true });
    const desc = { ...describeAddSub(config), instanceGroups: [{ kind: 'KIND_GPU' as const, count: 1, gpus: [0, 1] }] };
    const json = buildModelConfigJson(desc);
    expect(json.max_batch_size).toBe(0);
    expect(json).not.toHaveProperty('dynamic_batching');
    expect(json.model_transaction_policy).toEqual({ decoupled: true });
    expect(JSON.stringify(json, null, 2) + '\n').toBe(golden('no-batching.json'));
    expect(toPbtxt(json)).toBe(golden('no-batching.pbtxt'));
  });

  it('reports the GPU execution accelerators in optimization, in Triton\'s place and form', () => {
    const desc = { ...describeAddSub(new ModelConfig()), instanceGroups: [{ kind: 'KIND_GPU' as const, count: 1, gpus: [0] }], gpuExecutionAccelerators: ['tensorrt', 'webgpu'] };
    const json = buildModelConfigJson(desc);
    const optimization = json.optimization as Record<string, unknown>;
    expect(Object.keys(optimization)).toEqual(['priority', 'execution_accelerators', 'input_pinned_memory', 'output_pinned_memory', 'gather_kernel_buffer_threshold', 'eager_batching']);
    expect(optimization.execution_accelerators).toEqual({ gpu_execution_accelerator: [{ name: 'tensorrt', parameters: {} }, { name: 'webgpu', parameters: {} }], cpu_execution_accelerator: [] });
    expect(toPbtxt(json)).toContain('  execution_accelerators {\n    gpu_execution_accelerator {\n      name: "tensorrt"\n    }\n    gpu_execution_accelerator {\n      name: "webgpu"\n    }\n  }\n');
    // None named: no execution_accelerators, as before.
    expect(buildModelConfigJson({ ...desc, gpuExecutionAccelerators: [] }).optimization).not.toHaveProperty('execution_accelerators');
  });

  it('leaves dynamic_batching out when the batcher is null', () => {
    const json = buildModelConfigJson(describeAddSub(new ModelConfig({ batcher: null })));
    expect(json).not.toHaveProperty('dynamic_batching');
    expect(json.max_batch_size).toBe(4);
  });

  it('names unnamed specs INPUT_n / OUTPUT_n by position', () => {
    const specs = nameSpecs([{ dtype: 'FP32', shape: [1] }, { name: 'x', dtype: 'FP32', shape: [1] }, { dtype: 'INT8', shape: [1] }], 'INPUT');
    expect(specs.map((s) => s.name)).toEqual(['INPUT_1', 'x', 'INPUT_3']);
  });
});

describe('config validation', () => {
  it.each([
    [() => new ModelConfig({ maxBatchSize: 0 }), /invalid ModelConfig: maxBatchSize: maxBatchSize must not be less than 1; for a model without a batch dimension \(Triton's max_batch_size: 0\) set batching: false/],
    [() => new ModelConfig({ batcher: { maxQueueDelayMicroseconds: -1 } }), /invalid ModelConfig: batcher\.maxQueueDelayMicroseconds: maxQueueDelayMicroseconds must not be less than 0/],
    [() => new ModelConfig({ batcher: { defaultQueuePolicy: { timeoutAction: 'DROP' as 'REJECT' } } }), /batcher\.defaultQueuePolicy\.timeoutAction: timeoutAction must be one of REJECT, DELAY/],
    [() => new TensorSpec({ dtype: 'FLOAT' as 'FP32', shape: [1] }), /dtype must be one of BOOL, UINT8/],
    [() => new TensorSpec({ name: 'a/b', dtype: 'FP32', shape: [1] }), /name may hold only/],
    [() => new TensorSpec({ dtype: 'FP32', shape: [-2] }), /shape dims must be -1/],
    [() => new TritonConfig({ httpPort: 70000 }), /httpPort must not be greater than 65535/],
    [() => new TritonConfig({ logLevel: 'loud' as 'info' }), /logLevel must be one of silent, error, warn, info, debug/],
  ])('rejects invalid values naming the field (%#)', (make, message) => {
    expect(() => validateOrThrow(make(), make().constructor.name)).toThrow(message);
  });

  it("takes Triton's max_batch_size 0 spelled as batching: false, with or without maxBatchSize 0", () => {
    for (const init of [{ batching: false }, { batching: false, maxBatchSize: 0 }]) {
      const config = new ModelConfig(init);
      expect(() => validateOrThrow(config, 'ModelConfig')).not.toThrow();
      expect(config.effectiveMaxBatchSize).toBe(0);
    }
  });

  it('rejects unknown fields instead of ignoring typos', () => {
    expect(() => new ModelConfig({ maxBatchsize: 3 } as never)).toThrow(/unknown field "maxBatchsize"/);
    expect(() => new DynamicBatcher({ delay: 3 } as never)).toThrow(/unknown field "delay"/);
    expect(() => new QueuePolicy({ size: 1 } as never)).toThrow(/unknown field "size"/);
  });

  it('reads TSTRITON_* environment variables, overridden by explicit values', () => {
    expect(envName('httpMaxInputSize')).toBe('TSTRITON_HTTP_MAX_INPUT_SIZE');
    const c = TritonConfig.fromEnv({ TSTRITON_HTTP_PORT: '9000', TSTRITON_ALLOW_GRPC: 'false', TSTRITON_LOG_LEVEL: 'debug' }, { logLevel: 'error' });
    expect(c.httpPort).toBe(9000);
    expect(c.allowGrpc).toBe(false);
    expect(c.logLevel).toBe('error');
    expect(() => TritonConfig.fromEnv({ TSTRITON_HTTP_PORT: 'eighty' })).toThrow(/TSTRITON_HTTP_PORT: expected a number/);
    expect(() => TritonConfig.fromEnv({ TSTRITON_ALLOW_HTTP: 'maybe' })).toThrow(/expected true or false/);
  });

  it('has Triton defaults', () => {
    const c = new TritonConfig();
    expect([c.httpPort, c.grpcPort, c.metricsPort, c.httpMaxInputSize, c.jsonMaxDepth]).toEqual([8000, 8001, 8002, 64 * 1024 * 1024, 100]);
  });
});
