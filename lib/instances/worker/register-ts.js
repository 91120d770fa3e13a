// Lets a worker thread load this package's TypeScript sources, for when they run untranspiled (jest, ts
// tooling). Preloaded with `--require` by WorkerInstance only when its own file is `.ts`; the build in dist/
// never uses it. It transpiles each .ts file with the TypeScript compiler (a development dependency).
'use strict';
const fs = require('node:fs');
const ts = require('typescript');

const compilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  esModuleInterop: true,
  inlineSourceMap: true,
};

process.setSourceMapsEnabled(true);
require.extensions['.ts'] = function compileTs(module, filename) {
  const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { compilerOptions, fileName: filename });
  module._compile(outputText, filename);
};
