// The worker-instance model `counted` of servers/observability.js: echoes `x` as `y`.
'use strict';
module.exports = async (requests) => requests.map((r) => ({ y: r.inputs.x }));
