import * as fs from 'node:fs';
import * as path from 'node:path';

// The core entry (lib/server/infer-entry.ts) owns a request from the lookup of its model to its last response.
// The transports only parse and write: none of them decides by the decoupled flag, and the handlers that run
// inference never look a model up themselves.

const SERVER = path.join(__dirname, '../../../lib/server');
const ENTRY = path.join(SERVER, 'infer-entry.ts');

/** Every .ts file under lib/server. */
function serverFiles(dir = SERVER): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? serverFiles(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The source without comments, so that prose may name what code must not do. */
function code(file: string): string {
  return fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

const INFER_HANDLERS = [
  'grpc/model-infer.ts',
  'grpc/model-stream-infer.ts',
  'http/generate.ts',
  'openai/completions.ts',
  'openai/embeddings.ts',
  'openai/generation.ts',
].map((f) => path.join(SERVER, f));

describe('the core entry is the only place that', () => {
  it('branches on a model being decoupled', () => {
    const offenders = serverFiles().filter((f) => f !== ENTRY && /\.decoupled\b/.test(code(f)));
    expect(offenders.map((f) => path.relative(SERVER, f))).toEqual([]);
  });

  it('looks up the model of an inference request (the infer handlers go through inferAsync)', () => {
    for (const file of INFER_HANDLERS) expect(fs.existsSync(file)).toBe(true);
    const offenders = INFER_HANDLERS.filter((f) => /\brepository\b|\binferModel\b|\.infer\(|\.inferStream\(/.test(code(f)));
    expect(offenders.map((f) => path.relative(SERVER, f))).toEqual([]);
    // The HTTP /infer hot path, in the server's request handler, too.
    const http = code(path.join(SERVER, 'http/http-server.ts'));
    expect(http).toContain('inferAsync(');
    expect(http).not.toMatch(/core\.infer\(|inferModel/);
  });
});
