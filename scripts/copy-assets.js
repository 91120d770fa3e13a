// Copies non-TypeScript assets (the .proto files) next to the compiled code in dist/.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const pairs = [
  ['lib/protocol/proto', 'dist/lib/protocol/proto'],
  ['examples/ensemble', 'dist/examples/ensemble', (f) => f.endsWith('.onnx')],
  ['lib/instances/worker', 'dist/lib/instances/worker', (f) => f === 'register-ts.js'],
];
for (const [from, to, keep = () => true] of pairs) {
  const src = path.join(root, from);
  if (!fs.existsSync(src)) continue;
  fs.mkdirSync(path.join(root, to), { recursive: true });
  for (const f of fs.readdirSync(src)) if (keep(f)) fs.copyFileSync(path.join(src, f), path.join(root, to, f));
}
