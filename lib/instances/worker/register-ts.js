// Lets Node `require` TypeScript files (.ts, .cts) without a build step, by compiling each with esbuild (a dependency
// of tstriton) as it loads. tstriton installs it for a `--module` file, a repository's model.ts and a worker
// instance's module when no other TypeScript hook is there (load-export.ts, enableTypeScript); its worker and
// front-end threads preload it with `--require` when tstriton itself runs from its .ts sources (jest).
//
// esbuild strips the types and lowers what Node cannot run yet: standard (TC39) decorators, `accessor` fields. A
// file whose nearest tsconfig.json (following `extends`) sets `experimentalDecorators` gets legacy decorators
// instead; `useDefineForClassFields`, `verbatimModuleSyntax` and the settings esbuild reads with them are taken
// from there too. The output is CommonJS, for Node's `require`; type errors are not checked here (run `tsc`).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

/** What the TypeScript compiler options that esbuild honours for one file are taken from. */
const FORWARDED = [
  'alwaysStrict',
  'experimentalDecorators',
  'importsNotUsedAsValues',
  'preserveValueImports',
  'strict',
  'target',
  'useDefineForClassFields',
  'verbatimModuleSyntax',
];

/** esbuild, loaded at the first file: a failure to load it is reported with the file that needed it. */
let esbuild;

/** The compiler options per folder (from the nearest tsconfig.json), and per tsconfig file. */
const optionsByDir = new Map();
const optionsByConfig = new Map();

/**
 * esbuild's synchronous API keeps a service (a thread and an esbuild process) between calls; it is stopped once
 * the files have loaded, so that nothing stays open after a module is loaded. A synchronous `require` of many
 * files shares one service; a later load starts another.
 */
let idle;

process.setSourceMapsEnabled(true);
for (const ext of ['.ts', '.cts']) require.extensions[ext] = compileTs;

function compileTs(module, filename) {
  module._compile(transform(fs.readFileSync(filename, 'utf8'), filename), filename);
}

function transform(source, filename) {
  const compiler = loadEsbuild(filename);
  let result;
  try {
    result = compiler.transformSync(source, {
      loader: 'ts',
      format: 'cjs',
      // The Node that runs it: esbuild lowers only what this Node lacks (decorators, whichever Node it is).
      target: `node${process.versions.node}`,
      // `import()` becomes `require()`, as TypeScript compiles it for CommonJS: `import('./serve')` names no extension.
      supported: { 'dynamic-import': false },
      sourcemap: 'inline',
      sourcefile: filename,
      tsconfigRaw: { compilerOptions: compilerOptionsFor(path.dirname(filename)) },
      logLevel: 'silent',
    });
  } catch (err) {
    throw loadError(err, filename);
  } finally {
    stopWhenIdle(compiler);
  }
  return result.code;
}

function loadEsbuild(filename) {
  if (esbuild) return esbuild;
  try {
    esbuild = require('esbuild');
  } catch (err) {
    throw new Error(
      `cannot compile ${filename}: loading a .ts file needs the 'esbuild' package, a dependency of tstriton that is not ` +
        `installed here (reinstall tstriton, or compile the file to .js): ${err.message}`,
      { cause: err },
    );
  }
  return esbuild;
}

/** A syntax error as one line per problem, with the file and position; any other failure of esbuild as it came. */
function loadError(err, filename) {
  const problems = Array.isArray(err?.errors) ? err.errors : [];
  if (problems.length === 0) {
    return new Error(`cannot compile ${filename}: esbuild (which tstriton uses to load .ts files) failed: ${err?.message ?? err}`, { cause: err });
  }
  const lines = problems.map((p) => (p.location ? `${p.location.file}:${p.location.line}:${p.location.column + 1}: ${p.text}` : `${filename}: ${p.text}`));
  const error = new SyntaxError(`cannot compile ${filename}:\n  ${lines.join('\n  ')}`);
  error.cause = err;
  return error;
}

function stopWhenIdle(compiler) {
  if (idle) {
    idle.refresh();
    return;
  }
  idle = setTimeout(() => {
    idle = undefined;
    void compiler.stop();
  }, 200);
  idle.unref();
}

/** The compiler options of the nearest tsconfig.json at or above `dir` (none: esbuild's defaults). */
function compilerOptionsFor(dir) {
  let options = optionsByDir.get(dir);
  if (options) return options;
  const config = path.join(dir, 'tsconfig.json');
  const parent = path.dirname(dir);
  if (fs.existsSync(config)) options = pick(readConfig(config, new Set()));
  else options = parent === dir ? {} : compilerOptionsFor(parent);
  optionsByDir.set(dir, options);
  return options;
}

function pick(compilerOptions) {
  const picked = {};
  for (const key of FORWARDED) if (compilerOptions[key] !== undefined) picked[key] = compilerOptions[key];
  return picked;
}

/** A tsconfig file's `compilerOptions`, over those of what it `extends`. */
function readConfig(file, seen) {
  const cached = optionsByConfig.get(file);
  if (cached) return cached;
  if (seen.has(file)) return {};
  seen.add(file);
  let config;
  try {
    config = JSON.parse(stripJsonComments(fs.readFileSync(file, 'utf8')));
  } catch (err) {
    throw new Error(`cannot read ${file} (the tsconfig.json that applies to the .ts file being loaded): ${err.message}`, { cause: err });
  }
  const bases = config?.extends === undefined ? [] : [].concat(config.extends);
  let options = {};
  for (const base of bases) {
    const resolved = typeof base === 'string' ? resolveExtends(base, path.dirname(file)) : undefined;
    // A base that cannot be found contributes nothing here; tsc reports it.
    if (resolved) options = { ...options, ...readConfig(resolved, seen) };
  }
  options = { ...options, ...(config?.compilerOptions ?? {}) };
  optionsByConfig.set(file, options);
  return options;
}

/** Where an `extends` entry points: a path relative to the config, or a package's tsconfig. */
function resolveExtends(spec, dir) {
  const candidates = spec.endsWith('.json') ? [spec] : [spec, `${spec}.json`, `${spec}/tsconfig.json`];
  if (spec.startsWith('.') || path.isAbsolute(spec)) {
    return candidates.map((c) => path.resolve(dir, c)).find((c) => fs.existsSync(c) && fs.statSync(c).isFile());
  }
  const require = createRequire(path.join(dir, 'tsconfig.json'));
  for (const c of candidates) {
    try {
      return require.resolve(c);
    } catch {
      // the next form
    }
  }
  return undefined;
}

/** JSON with comments and trailing commas (tsconfig's syntax) as plain JSON. */
function stripJsonComments(text) {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      out += text.slice(start, i + 1);
    } else if (c === '/' && text[i + 1] === '/') {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 1;
      out += ' ';
    } else if (c === ',' && /^\s*[}\]]/.test(text.slice(i + 1).replace(/^(\s|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/, ''))) {
      // a trailing comma (before the closing bracket, past any blanks and comments)
    } else out += c;
  }
  return out;
}
