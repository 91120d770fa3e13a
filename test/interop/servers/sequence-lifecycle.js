// The server of test_sequence_lifecycle.py: `seq_idle`, a running sum whose sequences idle out after 200 ms, and
// `seq_worker`, the same in a worker instance whose state lives in the worker (a request with the parameter
// `action: 'exit'` kills it).
'use strict';
const path = require('node:path');
const { Triton, workers } = require('../../../dist/lib');

const state = [{ inputName: 'S', outputName: 'S_OUT', dtype: 'INT32', dims: [1] }];
const triton = new Triton();
triton.bind({
  modelName: 'seq_idle',
  inferFunc: async (requests) =>
    requests.map((r) => {
      const sum = r.inputs.INPUT.data[0] + r.inputs.S.data[0];
      return { OUTPUT: { shape: [1, 1], data: Int32Array.of(sum) }, S_OUT: { shape: [1, 1], data: Int32Array.of(sum) } };
    }),
  inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
  outputs: [{ name: 'OUTPUT', dtype: 'INT32', shape: [1] }],
  config: { maxBatchSize: 4, sequenceBatching: { maxSequenceIdleMicroseconds: 200_000, state } },
});
triton.bind({
  modelName: 'seq_worker',
  inferFunc: workers({ module: path.join(__dirname, '../../fixtures/workers/sequence-model.js'), devices: ['cpu'] }),
  inputs: [{ name: 'INPUT', dtype: 'INT32', shape: [1] }],
  outputs: [
    { name: 'OUTPUT', dtype: 'INT32', shape: [1] },
    { name: 'SEQ', dtype: 'BYTES', shape: [1] },
    { name: 'THREAD', dtype: 'INT32', shape: [1] },
  ],
  config: { maxBatchSize: 4, sequenceBatching: { oldest: {}, state } },
});
triton.serve().then((code) => process.exit(code));
