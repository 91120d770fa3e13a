import { join } from 'node:path';
import type { Request } from '../../../lib/callable/callable';
import { TritonError } from '../../../lib/base/errors';
import { createInstances } from '../../../lib/instances/create-instances';
import { InProcessInstance } from '../../../lib/instances/in-process-instance';
import { WorkerInstance } from '../../../lib/instances/worker-instance';
import { workers } from '../../../lib/instances/worker-spec';

const fixture = join(__dirname, '../../fixtures/workers/echo-model.js');
const fn = (rs: Request[]) => rs.map(() => ({}));

describe('createInstances', () => {
  it('makes one in-process instance on cpu:0 per function, object or class', () => {
    class Model {
      infer = fn;
    }
    const instances = createInstances([fn, { infer: fn }, Model], 'm');
    expect(instances.map((i) => [i.name, i.device, i instanceof InProcessInstance])).toEqual([
      ['m_0', { kind: 'cpu', id: 0 }, true],
      ['m_1', { kind: 'cpu', id: 0 }, true],
      ['m_2', { kind: 'cpu', id: 0 }, true],
    ]);
    expect(createInstances(fn, 'single').map((i) => i.name)).toEqual(['single_0']);
  });

  it('makes one worker instance per device of a workers() spec, and numbers mixed lists in order', () => {
    const spec = workers({ module: fixture, devices: ['cpu', 'gpu:0', 'gpu:1'] });
    const instances = createInstances([fn, spec], 'm');
    expect(instances.map((i) => [i.name, i.device, i.constructor.name])).toEqual([
      ['m_0', { kind: 'cpu', id: 0 }, 'InProcessInstance'],
      ['m_1', { kind: 'cpu', id: 0 }, 'WorkerInstance'],
      ['m_2', { kind: 'gpu', id: 0 }, 'WorkerInstance'],
      ['m_3', { kind: 'gpu', id: 1 }, 'WorkerInstance'],
    ]);
    expect(instances[1]).toBeInstanceOf(WorkerInstance);
    // No thread is spawned before start().
    expect(instances.every((i) => i.healthy === !(i instanceof WorkerInstance))).toBe(true);
  });

  it('rejects an empty list and bad entries with INVALID_CONFIG', () => {
    expect(() => createInstances([], 'm')).toThrow(new TritonError('INVALID_CONFIG', "model 'm': inferFunc list is empty"));
    expect(() => createInstances([fn, 'nope' as never], 'm')).toThrow(/model 'm': inferFunc must be a function or an object/);
  });
});
