import * as http from 'node:http';
import * as https from 'node:https';
import type { TritonConfig } from '../../config/triton-config';
import { serverTlsMaterial } from '../tls';
import { ConnectionDrain } from './connection-drain';
import { answerParserError } from './parser-errors';

/** A server of the HTTP port's kind and the connections it keeps, for an orderly stop. */
export interface NodeHttpServer {
  readonly server: http.Server | https.Server;
  readonly connections: ConnectionDrain;
}

/**
 * The node:http server (node:https with the HTTP TLS settings) every HTTP-speaking port runs on, the KServe port
 * and the OpenAI port alike: Nagle off, keep-alive longer than load balancers' usual 60 s idle timeout (so that
 * the server is not the one to close a connection a balancer is about to reuse), parse errors answered as HTTP
 * answers them, and each connection tracked so that stopping closes it between two exchanges.
 */
export function createNodeHttpServer(config: TritonConfig, handler: http.RequestListener): NodeHttpServer {
  const tls = serverTlsMaterial('http', config);
  const server = tls
    ? https.createServer({ noDelay: true, cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}), requestCert: tls.mutual, rejectUnauthorized: tls.mutual }, handler)
    : http.createServer({ noDelay: true }, handler);
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerParserError);
  return { server, connections: new ConnectionDrain(server) };
}
