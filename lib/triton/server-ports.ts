import type { TritonConfig } from '../config/triton-config';
import { TritonError } from '../base/errors';
import { FrontEnds, frontEndThreadCount, reusePortSupported, type FrontEndHost } from '../server/front-end/front-ends';
import type { GrpcServer } from '../server/grpc/grpc-server';
import type { HttpServer } from '../server/http/http-server';
import { openAiPortServer } from '../server/http-ports';
import { RestrictedApis } from '../server/restricted-api';
import type { Transport } from '../server/server-core';

/** The server's own endpoints on this thread, built with it. */
export interface PortServers extends FrontEndHost {
  /** The HTTP port's server (users' routes are mounted on its router). */
  readonly httpServer: HttpServer;
  /** The gRPC endpoint, when `allowGrpc`. */
  readonly grpc: GrpcServer | undefined;
}

/**
 * The HTTP, OpenAI and gRPC transports: on `httpThreadCount` front-end threads where there are more than one,
 * else on this thread. Routes mounted on `http.router` are served on this thread only, so with them an automatic
 * thread count stays at one (and an explicit one above one is refused).
 */
export function portTransports(servers: PortServers): Transport[] {
  const { config, logger, httpServer, grpc, core, refusal } = servers;
  const openai = config.openai && config.openaiPort >= 0;
  let threads = config.allowHttp || config.allowGrpc || openai ? frontEndThreadCount(config) : 1;
  if (threads > 1 && httpServer.router.stack.length > 0) {
    if (config.httpThreadCount > 1) {
      throw new TritonError('INVALID_CONFIG', `routes mounted on http.router are served on the core thread only; set httpThreadCount to 1 (it is ${config.httpThreadCount})`);
    }
    logger.info({}, 'routes are mounted on http.router: the ports are served on the core thread (httpThreadCount 1)');
    threads = 1;
  }
  if (threads > 1 && !reusePortSupported()) {
    logger.warn({ httpThreadCount: threads, node: process.versions.node, platform: process.platform }, 'this platform cannot listen on one port from several threads (reusePort): the core thread serves the ports');
    threads = 1;
  }
  if (threads > 1) return new FrontEnds({ core, repository: servers.repository, config, logger, refusal }, threads).transports();
  const transports: Transport[] = [];
  if (config.allowHttp) {
    transports.push({
      name: 'http',
      start: () => httpServer.listen(config.httpPort, config.httpAddress),
      drain: () => httpServer.drain(),
      stopAccepting: () => httpServer.stopAccepting(),
      forceClose: () => httpServer.forceClose(),
    });
  }
  if (openai) transports.push(openAiPortServer(core, logger));
  if (grpc) transports.push(grpc);
  return transports;
}

/** True when every port that serves the model repository API (load, unload) asks for a key. */
export function repositoryApiNeedsKey(config: TritonConfig): boolean {
  const http = !config.allowHttp || RestrictedApis.parse(config.httpRestrictedApi, 'httpRestrictedApi').restriction('model-repository') !== undefined;
  const grpc = !config.allowGrpc || RestrictedApis.parse(config.grpcRestrictedProtocol, 'grpcRestrictedProtocol').restriction('model-repository') !== undefined;
  return http && grpc;
}
