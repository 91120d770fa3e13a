import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TritonError } from '../../../lib/base/errors';
import { isWorkerSpec, workers } from '../../../lib/instances/worker-spec';

const fixture = join(__dirname, '../../fixtures/workers/echo-model.js');

describe('workers()', () => {
  it('fills in the defaults: default export, one cpu device, restart and close timings', () => {
    const spec = workers({ module: fixture });
    expect(isWorkerSpec(spec)).toBe(true);
    expect(spec.module).toBe(fixture);
    expect(spec.exportName).toBe('default');
    expect(spec.devices).toEqual([{ kind: 'cpu', id: 0 }]);
    expect(spec.options).toEqual({ restartDelayMs: 100, maxRestartDelayMs: 10_000, closeTimeoutMs: 30_000 });
    expect(Object.isFrozen(spec)).toBe(true);
  });

  it('parses devices in every accepted form, one entry per worker', () => {
    const spec = workers({ module: fixture, devices: ['cpu', 'cpu', 'gpu', 'gpu:1', 'CUDA:2', { kind: 'gpu', id: 3 }] });
    expect(spec.devices).toEqual([
      { kind: 'cpu', id: 0 },
      { kind: 'cpu', id: 0 },
      { kind: 'gpu', id: 0 },
      { kind: 'gpu', id: 1 },
      { kind: 'gpu', id: 2 },
      { kind: 'gpu', id: 3 },
    ]);
  });

  it('accepts a file URL, as a URL or a string, and keeps the options it is given', () => {
    const url = pathToFileURL(fixture);
    expect(workers({ module: url }).module).toBe(fixture);
    const spec = workers({ module: url.href, exportName: 'named', options: { restartDelayMs: 5, resourceLimits: { maxOldGenerationSizeMb: 64 } } });
    expect(spec.module).toBe(fixture);
    expect(spec.exportName).toBe('named');
    expect(spec.options.restartDelayMs).toBe(5);
    expect(spec.options.resourceLimits).toEqual({ maxOldGenerationSizeMb: 64 });
  });

  it.each([
    [{ module: 'model.js' }, /absolute path or a file: URL, got 'model.js'/],
    [{ module: 42 }, /absolute path or a file: URL, got number/],
    [{ module: join(__dirname, 'missing.js') }, /missing\.js' does not exist/],
    [{ module: fixture, exportName: '' }, /exportName must be a non-empty string/],
    [{ module: fixture, devices: [] }, /devices must be a non-empty array/],
    [{ module: fixture, devices: ['tpu'] }, /devices\[0\]: invalid device "tpu"/],
    [{ module: fixture, devices: ['cpu', { kind: 'gpu', id: -1 }] }, /devices\[1\]: expected/],
    [{ module: fixture, options: { restartDelayMs: 0 } }, /options.restartDelayMs must be a finite number >= 1, got 0/],
    [{ module: fixture, options: { closeTimeoutMs: -1 } }, /options.closeTimeoutMs must be a finite number >= 0, got -1/],
    [{ module: fixture, options: { closeTimeoutMs: Infinity } }, /options.closeTimeoutMs/],
    [{ module: fixture, options: { execArgv: '--foo' } }, /options.execArgv must be an array of strings/],
  ])('rejects %j', (init, message) => {
    const call = () => workers(init as unknown as Parameters<typeof workers>[0]);
    expect(call).toThrow(TritonError);
    expect(call).toThrow(message);
    try {
      call();
    } catch (err) {
      expect((err as TritonError).code).toBe('INVALID_CONFIG');
    }
  });

  it('is not mistaken for an inference object', () => {
    expect(isWorkerSpec({ module: fixture, exportName: 'default', devices: [] })).toBe(false);
    expect(isWorkerSpec(null)).toBe(false);
  });
});
