// Serves the config.pbtxt reader and writer of the build to test_config_text.py: one JSON request per line on
// stdin, one JSON answer per line on stdout.
//   {"op": "parse", "text": "...", "file": "config.pbtxt"}  -> {"ok": true, "result": {...}}
//   {"op": "reformat", "text": "..."}                        -> {"ok": true, "result": "<formatted text>"}
//   {"op": "format", "json": {...}}                           -> {"ok": true, "result": "<formatted text>"}
//   any failure                                               -> {"ok": false, "code": "INVALID_CONFIG", "message": "..."}
// JSON has no NaN or infinities: they travel as the strings protobuf's JSON mapping uses ("NaN", "Infinity").
'use strict';
const readline = require('node:readline');
const { parseModelConfigText, formatModelConfigText } = require('../../../dist/lib/config/model-config-text.js');

function handle(request) {
  switch (request.op) {
    case 'parse':
      return parseModelConfigText(request.text, request.file ?? 'config.pbtxt');
    case 'reformat':
      return formatModelConfigText(parseModelConfigText(request.text, request.file ?? 'config.pbtxt'));
    case 'format':
      return formatModelConfigText(request.json);
    default:
      throw new Error(`unknown op ${request.op}`);
  }
}

function nonFinite(_key, value) {
  if (typeof value !== 'number' || Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? 'Infinity' : '-Infinity';
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  let answer;
  try {
    answer = { ok: true, result: handle(JSON.parse(line)) };
  } catch (err) {
    answer = { ok: false, code: err.code ?? null, message: err.message };
  }
  process.stdout.write(`${JSON.stringify(answer, nonFinite)}\n`);
});
