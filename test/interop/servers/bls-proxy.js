// A second server process for the BLS test: model `proxy_add_sub` forwards each request to `add_sub` on the
// server at UPSTREAM_URL (http://… or grpc://…) and returns its `add` output as `sum`.
'use strict';
const { Triton } = require('../../../dist/lib');

const triton = new Triton();
triton.bind({
  modelName: 'proxy_add_sub',
  inferFunc: async (requests) =>
    Promise.all(
      requests.map(async (r) => {
        const out = await r.infer({ modelName: 'add_sub', inputs: { a: r.inputs.a, b: r.inputs.b }, requestedOutputs: ['add'], url: process.env.UPSTREAM_URL });
        return { sum: out.add };
      }),
    ),
  inputs: [
    { name: 'a', dtype: 'FP32', shape: [-1] },
    { name: 'b', dtype: 'FP32', shape: [-1] },
  ],
  outputs: [{ name: 'sum', dtype: 'FP32', shape: [-1] }],
  config: { maxBatchSize: 8 },
});
triton.serve().then((code) => process.exit(code));
