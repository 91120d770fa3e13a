// The worker-instance model `counted` of servers/observability.js: echoes `x` as `y`, and counts the rows it
// sees and the size of each batch in custom metrics (context.metrics), from its worker thread.
'use strict';
const { instanceFactory } = require('../../../dist/lib');

module.exports = instanceFactory((context) => {
  const rows = context.metrics.family({ name: 'counted_rows_total', description: 'Rows the counted model saw', kind: 'counter' }).metric();
  const batch = context.metrics.family({ name: 'counted_batch_requests', description: 'Requests per batch of the counted model', kind: 'histogram', buckets: [1, 2, 4, 8] }).metric();
  return async (requests) => {
    batch.observe(requests.length);
    return requests.map((r) => {
      rows.increment(r.inputs.x.shape[0]);
      return { y: r.inputs.x };
    });
  };
});
