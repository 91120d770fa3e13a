import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as ts from 'typescript';

// The project depends on grpc-js through its public API only (docs/grpc.md): replacing a private function of its
// server (createHttp2Server, commonServerOptions) bought speed until a release changed it. This check fails if
// code under the SDK's source folders reaches into grpc-js again: a deep import of its build files, or a use of a
// private member of its Server or ServerCredentials, by name (property access, element access, string).

const ROOT = join(__dirname, '../../..');
const SOURCE_DIRS = ['lib', 'decorators', 'bench', 'examples'];
const GRPC_JS = join(ROOT, 'node_modules/@grpc/grpc-js');

/** The members grpc-js's server was patched through before, named here so that the check stands on its own. */
const KNOWN = ['createHttp2Server', 'commonServerOptions', 'http2Servers', '_setupHandlers', '_streamHandler', '_getConstructorOptions', '_getSecureContextOptions'];
/** Private member names too common to mean grpc-js (`options`, `handlers`): only names with a capital or a leading underscore count. */
const DISTINCTIVE = /^_|[A-Z]/;

/**
 * Private, protected and underscore-named members of the grpc-js objects a server holds (its `Server` and its
 * `ServerCredentials`), read from its type declarations.
 */
function grpcJsPrivateMembers(): Set<string> {
  const names = new Set(KNOWN);
  for (const file of ['server.d.ts', 'server-credentials.d.ts']) {
    const source = ts.createSourceFile(file, readFileSync(join(GRPC_JS, 'build/src', file), 'utf8'), ts.ScriptTarget.Latest);
    const visit = (node: ts.Node): void => {
      if (ts.isClassElement(node) && node.name && (ts.isIdentifier(node.name) || ts.isPrivateIdentifier(node.name))) {
        const name = node.name.text;
        const hidden = ts.getModifiers(node as ts.HasModifiers)?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
        if ((hidden || name.startsWith('_')) && DISTINCTIVE.test(name)) names.add(name);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return names;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|js)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Where `text` reaches into grpc-js: deep imports and uses of `privateNames`, as `line: what`. */
function violations(fileName: string, text: string, privateNames: ReadonlySet<string>): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string): void => {
    found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node)) {
      if (node.text.startsWith('@grpc/grpc-js/')) at(node, `imports grpc-js's internals ('${node.text}')`);
      else if (privateNames.has(node.text)) at(node, `names grpc-js's private member '${node.text}'`);
    } else if (ts.isPropertyAccessExpression(node) && privateNames.has(node.name.text)) {
      at(node, `uses grpc-js's private member '${node.name.text}'`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('no grpc-js internals', () => {
  const privateNames = grpcJsPrivateMembers();

  it('knows the private members of grpc-js it guards against', () => {
    for (const name of KNOWN) expect(privateNames).toContain(name);
    // Read from the installed grpc-js: more than the list above.
    expect(privateNames.size).toBeGreaterThan(KNOWN.length + 10);
  });

  it('finds a deep import and each kind of private access in a sample (so that the check below can fail)', () => {
    const sample = [
      "import { Http2ServerCallStream } from '@grpc/grpc-js/build/src/server-call';",
      'const create = (server as any).createHttp2Server;',
      "const options = (server as any)['commonServerOptions'];",
      '// a comment may name createHttp2Server',
    ].join('\n');
    expect(violations('sample.ts', sample, privateNames)).toEqual([
      "1: imports grpc-js's internals ('@grpc/grpc-js/build/src/server-call')",
      "2: uses grpc-js's private member 'createHttp2Server'",
      "3: names grpc-js's private member 'commonServerOptions'",
    ]);
  });

  it('finds none in lib/, decorators/, bench/ or examples/', () => {
    const found = SOURCE_DIRS.flatMap((dir) =>
      sourceFiles(join(ROOT, dir)).flatMap((file) => violations(file, readFileSync(file, 'utf8'), privateNames).map((v) => `${relative(ROOT, file)}:${v}`)),
    );
    expect(found).toEqual([]);
  });
});
