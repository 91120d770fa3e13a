/**
 * The identity model of bench:cores in a worker instance: the same callable as examples/identity/model.ts
 * (`@batch`, INPUT0 back as OUTPUT0), built in the worker's thread, which names itself `instance` first so that
 * the benchmark can tell its CPU apart (thread-names.ts).
 */
import { instanceFactory } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { nameThisInstanceThread } from './thread-names';

export default instanceFactory(() => {
  nameThisInstanceThread();
  return batch(async (inputs) => ({ OUTPUT0: inputs.INPUT0! }));
});
