import type { Logger } from '../logging/logger';
import { HttpServer } from './http/http-server';
import { mountOpenAi } from './openai/openai-frontend';
import type { ServerCore } from './server-core';

// The HTTP servers of the ports: where the OpenAI-compatible API is mounted on the HTTP host.

/** The HTTP port (`httpPort`): KServe v2, users' routes, and with `openai` the OpenAI-compatible API under `/v1`. */
export function httpPortServer(core: ServerCore, logger: Logger): HttpServer {
  return new HttpServer(core, logger, core.config.openai ? { mount: mountOpenAi(core, logger) } : {});
}

/** The OpenAI port (`openaiPort`): the OpenAI-compatible API alone. */
export function openAiPortServer(core: ServerCore, logger: Logger): HttpServer {
  return new HttpServer(core, logger, { mount: mountOpenAi(core, logger), alone: { name: 'openai', port: core.config.openaiPort } });
}
