import { join } from 'node:path';
import { spawnServing, type ServingChild } from '../helpers/serving-child';

// `tstriton serve --openai` in a process of its own, run from the sources with the TypeScript hook, as
// cli.test.ts runs it; found through the "serving" log line.

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];
const MODULE = join(ROOT, 'test/fixtures/cli/text-model.ts');

type Server = ServingChild;

function startServer(args: string[], env: NodeJS.ProcessEnv): Promise<Server> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
  return spawnServing([...CLI, 'serve', ...args, '--http-address', '127.0.0.1', '--http-port', '0', '--allow-grpc', 'false', '--allow-metrics', 'false'], {
    cwd: ROOT,
    env: { ...clean, ...env },
  });
}

describe('tstriton serve --openai', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startServer(['--module', MODULE, '--openai', '--openai-port', '0'], { TSTRITON_OPENAI_API_KEY: 'sk-cli' });
  });

  // If beforeAll failed, `server` is unset and the tracked child is stopped after the file.
  afterAll(async () => {
    if (!server) return;
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('serves the OpenAI API on the HTTP port and on its own, behind the key from TSTRITON_OPENAI_API_KEY', async () => {
    expect(Object.keys(server.ports).sort()).toEqual(['http', 'openai']);
    for (const port of [server.ports.http, server.ports.openai]) {
      const url = `http://127.0.0.1:${port}/v1/chat/completions`;
      const body = JSON.stringify({ model: 'shout', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'hello' }] });
      const refused = await fetch(url, { method: 'POST', body });
      expect(refused.status).toBe(401);
      const res = await fetch(url, { method: 'POST', body, headers: { Authorization: 'Bearer sk-cli' } });
      expect(res.status).toBe(200);
      const reply = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(reply.choices[0]!.message.content).toBe('HELLO');
    }
  });
});
