import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { applyBindOverrides } from '../../../lib/analyze/bind-overrides';
import { withOverrides, writeCandidateRepositories } from '../../../lib/analyze/candidate-repository';
import { parseModelConfigText } from '../../../lib/config/model-config-text';
import { parseProcessSample, cpuPercent } from '../../../lib/analyze/process-usage';
import { workers, isWorkerSpec } from '../../../lib/instances/worker-spec';
import { ensemble } from '../../../lib/model/ensemble-spec';
import { onnxModel, isOnnxModelSpec } from '../../../lib/onnx/onnx-model';
import type { BindOptions } from '../../../lib/model/bind-options';

const IO = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [4] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [4] }] };
const callable = async () => [];

describe('applyBindOverrides', () => {
  it('sets max_batch_size and the queue delay, keeping the rest of the config', () => {
    const options: BindOptions = { modelName: 'm', inferFunc: callable, ...IO, config: { maxBatchSize: 4, batcher: { preferredBatchSize: [2] } } };
    const out = applyBindOverrides(options, { maxBatchSize: 32, maxQueueDelayMicroseconds: 100 });
    expect(out.config).toEqual({ maxBatchSize: 32, batcher: { preferredBatchSize: [2], maxQueueDelayMicroseconds: 100 } });
    expect(options.config).toEqual({ maxBatchSize: 4, batcher: { preferredBatchSize: [2] } });
  });

  it('leaves a model that does not batch unbatched', () => {
    const out = applyBindOverrides({ modelName: 'm', inferFunc: callable, ...IO, config: { batching: false } }, { maxBatchSize: 32, maxQueueDelayMicroseconds: 100 });
    expect(out.config).toEqual({ batching: false });
  });

  it('repeats an in-process callable, and sets the devices of a workers() spec or an onnxModel()', () => {
    expect(applyBindOverrides({ modelName: 'm', inferFunc: callable, ...IO }, { instanceCount: 3, kind: 'cpu' }).inferFunc).toEqual([callable, callable, callable]);
    const spec = workers({ module: __filename, devices: ['cpu'] });
    const moved = applyBindOverrides({ modelName: 'm', inferFunc: spec, ...IO }, { instanceCount: 2, kind: 'gpu:1' }).inferFunc;
    expect(isWorkerSpec(moved) && moved.devices).toEqual([{ kind: 'gpu', id: 1 }, { kind: 'gpu', id: 1 }]);
    const onnx = onnxModel({ path: path.join(__dirname, '../../fixtures/onnx/identity_fp32.onnx') });
    const more = applyBindOverrides({ modelName: 'm', inferFunc: onnx }, { instanceCount: 2, kind: 'cpu' }).inferFunc;
    expect(isOnnxModelSpec(more) && more.init.devices).toEqual([{ kind: 'cpu', id: 0 }, { kind: 'cpu', id: 0 }]);
  });

  it('refuses instances it cannot make', () => {
    expect(() => applyBindOverrides({ modelName: 'm', inferFunc: callable, ...IO }, { instanceCount: 1, kind: 'gpu:0' })).toThrow("model 'm' runs in-process: its instances run on the CPU, not gpu:0");
    expect(() => applyBindOverrides({ modelName: 'e', inferFunc: ensemble({ steps: [] }), ...IO }, { instanceCount: 2 })).toThrow("model 'e' is an ensemble");
  });
});

describe('withOverrides (config.pbtxt of a repository candidate)', () => {
  it('sets max_batch_size, the queue delay and one instance group', () => {
    const config = { name: 'mlp', max_batch_size: 4, dynamic_batching: { preferred_batch_size: [4] }, instance_group: [{ count: 1, kind: 'KIND_CPU' }] };
    expect(withOverrides(config, { maxBatchSize: 32, maxQueueDelayMicroseconds: 500, instanceCount: 2, kind: 'gpu:1' })).toEqual({
      name: 'mlp',
      max_batch_size: 32,
      dynamic_batching: { preferred_batch_size: [4], max_queue_delay_microseconds: 500 },
      instance_group: [{ count: 2, kind: 'KIND_GPU', gpus: [1] }],
    });
  });
});

describe('process usage', () => {
  it('reads utime, stime and VmRSS, with a command name holding spaces and parentheses', () => {
    const stat = (ticks: number) => `42 (node (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 ${ticks} ${ticks} 0 0 20 0 11 0 100 1000 200`;
    const before = parseProcessSample(stat(100), 'Name:\tnode\nVmRSS:\t  2048 kB\n', 0);
    const after = parseProcessSample(stat(150), 'VmRSS:\t4096 kB\n', 1000);
    expect(before).toEqual({ cpuSeconds: 2, rssBytes: 2048 * 1024, atMs: 0 });
    expect(cpuPercent(before!, after!)).toBe(100);
  });
});

describe('writeCandidateRepositories', () => {
  it('links the other models, hard-links the model files and rewrites its config.pbtxt', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-candidate-repo-'));
    try {
      const source = path.join(root, 'models');
      fs.mkdirSync(path.join(source, 'mlp', '1'), { recursive: true });
      fs.mkdirSync(path.join(source, 'other', '1'), { recursive: true });
      fs.writeFileSync(path.join(source, 'mlp', '1', 'model.onnx'), 'weights');
      fs.writeFileSync(path.join(source, 'mlp', 'config.pbtxt'), 'max_batch_size: 4\n');
      const [out] = writeCandidateRepositories([source], 'mlp', { maxBatchSize: 16, maxQueueDelayMicroseconds: 100, instanceCount: 2, kind: 'cpu' }, path.join(root, 'out'));
      expect(fs.lstatSync(path.join(out as string, 'other')).isSymbolicLink()).toBe(true);
      const file = path.join(out as string, 'mlp', '1', 'model.onnx');
      expect(fs.lstatSync(file).isSymbolicLink()).toBe(false);
      expect(fs.statSync(file).ino).toBe(fs.statSync(path.join(source, 'mlp', '1', 'model.onnx')).ino);
      expect(parseModelConfigText(fs.readFileSync(path.join(out as string, 'mlp', 'config.pbtxt'), 'utf8'), 'config.pbtxt')).toEqual({
        max_batch_size: 16,
        dynamic_batching: { max_queue_delay_microseconds: 100 },
        instance_group: [{ count: 2, kind: 'KIND_CPU' }],
      });
      expect(fs.readFileSync(path.join(source, 'mlp', 'config.pbtxt'), 'utf8')).toBe('max_batch_size: 4\n');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
