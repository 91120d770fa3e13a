import { TritonError } from '../base/errors';
import type { InferFunc } from '../callable/infer-func';
import { InProcessInstance } from './in-process-instance';
import type { Instance } from './instance';
import { WorkerInstance } from './worker-instance';
import { isWorkerSpec } from './worker-spec';

/**
 * Turns `bind()`'s `inferFunc` into the model's instances, named `<model>_<index>`: each function, object,
 * class or factory becomes one in-process instance on `cpu:0`; a `workers(...)` spec becomes one worker
 * instance per device. A list may mix both. Functions and objects are checked here (a bad one throws
 * INVALID_CONFIG); classes, factories and worker modules are built when the instance starts.
 */
export function createInstances(inferFunc: InferFunc, modelName: string): Instance[] {
  const entries: readonly unknown[] = Array.isArray(inferFunc) ? inferFunc : [inferFunc];
  if (entries.length === 0) throw new TritonError('INVALID_CONFIG', `model '${modelName}': inferFunc list is empty`);
  const instances: Instance[] = [];
  for (const entry of entries) {
    if (isWorkerSpec(entry)) {
      for (const device of entry.devices) instances.push(new WorkerInstance(`${modelName}_${instances.length}`, device, entry));
    } else {
      instances.push(new InProcessInstance(`${modelName}_${instances.length}`, { kind: 'cpu', id: 0 }, entry as object, modelName));
    }
  }
  return instances;
}
