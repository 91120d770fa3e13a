// Lets a worker thread load this package's TypeScript sources, for when they run untranspiled (jest, ts
// tooling). Preloaded with `--require` by WorkerInstance only when its own file is `.ts`; the build in dist/
// never uses it. It compiles each .ts file with @swc/core (a development dependency), as jest does.
'use strict';
const fs = require('node:fs');
const swc = require('@swc/core');

const options = {
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
  },
  module: { type: 'commonjs' },
  sourceMaps: 'inline',
};

process.setSourceMapsEnabled(true);
require.extensions['.ts'] = function compileTs(module, filename) {
  const { code } = swc.transformSync(fs.readFileSync(filename, 'utf8'), { ...options, filename });
  module._compile(code, filename);
};
