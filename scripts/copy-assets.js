// Copies non-TypeScript assets next to the compiled code in dist/: the .proto files, and the files of Swagger UI the
// API reference page serves (lib/server/openapi/docs-page.ts), from the swagger-ui-dist devDependency, so that the
// package ships those three files rather than depending on the whole of swagger-ui-dist.
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const pairs = [
  ['lib/protocol/proto', 'dist/lib/protocol/proto'],
  ['examples/ensemble', 'dist/examples/ensemble', (f) => f.endsWith('.onnx')],
  ['lib/instances/worker', 'dist/lib/instances/worker', (f) => f === 'register-ts.js'],
];
const swaggerUi = path.dirname(require.resolve('swagger-ui-dist/package.json', { paths: [root] }));
// The list of files is the page's own, from its compiled module (tsc has run).
const { SWAGGER_UI_FILES } = require(path.join(root, 'dist/lib/server/openapi/docs-page.js'));
pairs.push([path.relative(root, swaggerUi), 'dist/lib/server/openapi/swagger-ui', (f) => SWAGGER_UI_FILES.includes(f)]);
for (const [from, to, keep = () => true] of pairs) {
  const src = path.join(root, from);
  if (!fs.existsSync(src)) continue;
  fs.mkdirSync(path.join(root, to), { recursive: true });
  for (const f of fs.readdirSync(src)) if (keep(f)) fs.copyFileSync(path.join(src, f), path.join(root, to, f));
}
