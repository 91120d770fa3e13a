import * as http from 'node:http';
import * as https from 'node:https';
import { TritonError, SERVER_STOPPING_MESSAGE } from '../../errors';
import type { Logger } from '../../logger';
import type { ConnectionDrain } from '../http/connection-drain';
import { createNodeHttpServer } from '../http/node-server';
import { requestTarget } from '../http/request-target';
import { listenOn } from '../listen';
import { RestrictedApis } from '../restricted-api';
import type { ServerCore, Transport } from '../server-core';
import { isOpenAiPath, OpenAiFrontend } from './openai-frontend';
import { sendOpenAiError } from './openai-error';

/**
 * The OpenAI-compatible API on a port of its own (`openaiPort`), as Triton's OpenAI frontend has one: the same
 * endpoints, restrictions, API key and TLS settings as on the HTTP port, and the same orderly stop.
 */
export class OpenAiServer implements Transport {
  readonly name = 'openai';
  private readonly server: http.Server | https.Server;
  private readonly connections: ConnectionDrain;

  constructor(
    private readonly core: ServerCore,
    logger: Logger,
  ) {
    const frontend = new OpenAiFrontend(core, RestrictedApis.parse(core.config.httpRestrictedApi, 'httpRestrictedApi'), logger);
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      this.connections.track(req, res);
      if (this.connections.closing) {
        req.once('end', () => sendOpenAiError(res, new TritonError('UNAVAILABLE', SERVER_STOPPING_MESSAGE)));
        req.resume();
        return;
      }
      let path: string;
      try {
        ({ path } = requestTarget(req.url ?? '/'));
      } catch (err) {
        return sendOpenAiError(res, err);
      }
      if (isOpenAiPath(path)) frontend.handle(req, res, path);
      else sendOpenAiError(res, new TritonError('NOT_FOUND', `Invalid URL (${req.method ?? ''} ${path})`));
    };
    ({ server: this.server, connections: this.connections } = createNodeHttpServer(core.config, handler));
  }

  start(): Promise<number> {
    return listenOn(this.server, this.core.config.openaiPort, this.core.config.httpAddress);
  }

  drain(): void {
    this.connections.drain();
  }

  stopAccepting(): Promise<void> {
    return this.connections.close(5000);
  }

  forceClose(): void {
    this.connections.destroyAll();
    this.server.close();
  }
}
