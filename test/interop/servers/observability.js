// The server of the observability interop tests (response parameters, metrics, custom metrics, OpenTelemetry)
// and of deploy/grafana/render.py: `echo` (@batch, response parameters; fail=true fails its batch), `words` (decoupled, response parameters on every response) and
// `counted` (a worker instance that updates custom metrics through its context).
'use strict';
const path = require('node:path');
const { Triton, RESPONSE_PARAMETERS, tensor, workers } = require('../../../dist/lib');
const { batch, sample } = require('../../../dist/decorators');

const triton = new Triton();
triton.bind({
  modelName: 'echo',
  inferFunc: batch(async ({ x }, ctx) => {
    // A request with the parameter fail=true fails its batch (the dashboard's failures panel shows BACKEND).
    if (ctx.requests.some((r) => r.parameters.fail === true)) throw new Error('asked to fail');
    return { y: x, [RESPONSE_PARAMETERS]: ctx.rows.map((rows) => ({ rows, source: 'echo', exact: true, ratio: 0.5 })) };
  }),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
  config: { maxBatchSize: 8 },
});
triton.bind({
  modelName: 'words',
  inferFunc: sample(async function* (inputs) {
    const words = Buffer.from(inputs.TEXT.data[0]).toString('utf8').split(' ');
    for (let i = 0; i < words.length; i++) yield { WORD: tensor('BYTES', [1], [words[i]]), [RESPONSE_PARAMETERS]: { index: i, last: i === words.length - 1 } };
  }),
  inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
  outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
  config: { batching: false, decoupled: true },
});
if (process.env.OBSERVABILITY_WORKER_MODEL !== '0') {
  triton.bind({
    modelName: 'counted',
    inferFunc: workers({ module: path.join(__dirname, 'counted-model.js'), devices: ['cpu'] }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
}
triton.serve().then((code) => process.exit(code));
