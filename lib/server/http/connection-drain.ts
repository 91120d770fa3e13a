import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server, type Socket } from 'node:net';

/**
 * How long a closing server keeps a kept-alive connection open after its last response. A client that got
 * that response before the server started stopping may be sending its next request on the connection just
 * then; closing it under that request would reset it, so it is given this long to arrive (and get its 503).
 */
const IDLE_LINGER_MS = 100;

/** What the drain knows of a connection that has carried requests. */
interface Carrier {
  /** Exchanges in progress (pipelining may make it more than one). */
  inProgress: number;
  /** When its last response was done (`performance.now()`). */
  idleSince: number;
}

/**
 * The connections of the HTTP endpoint, tracked so that a stopping server closes each one between two
 * exchanges, never under one: no client sees a reset.
 *
 * Stopping has two steps. `drain()` (the server starts stopping; in-flight inference finishes): every response
 * from then on, those already being prepared included, says `Connection: close` and its connection closes once
 * it is written, so keep-alive clients send no further request on it; the port stays open, and a client that
 * reconnects gets its answer (503 from the stopping server). `close()` (in-flight work is done): the port closes;
 * a request that still arrives on an open connection is refused (`closing`: 503, `Connection: close`); idle
 * connections that have carried requests are closed; a connection whose first request has not arrived yet (a
 * client that has just reconnected) is waited for; and every response under way is written before its
 * connection closes.
 */
export class ConnectionDrain {
  /** Every open connection (for HTTPS, the TCP socket under the TLS one). */
  private readonly sockets = new Set<Socket>();
  /** Connections that have carried a request. */
  private readonly carriers = new Map<Socket, Carrier>();
  /** Responses in progress. */
  private readonly responses = new Set<ServerResponse>();
  private stage: 'serving' | 'draining' | 'closing' = 'serving';
  private onAllClosed: (() => void) | undefined;

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => {
        this.sockets.delete(socket);
        if (this.sockets.size === 0) this.onAllClosed?.();
      });
    });
  }

  /** True once the port is closed: a request arriving now is refused, and its connection closed after the answer. */
  get closing(): boolean {
    return this.stage === 'closing';
  }

  /** Counts an exchange on its connection until its response is done; while stopping, the response closes the connection. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket as Socket;
    let carrier = this.carriers.get(socket);
    if (carrier === undefined) {
      const created: Carrier = { inProgress: 0, idleSince: 0 };
      this.carriers.set(socket, created);
      socket.once('close', () => this.carriers.delete(socket));
      carrier = created;
    }
    const tracked = carrier;
    tracked.inProgress++;
    this.responses.add(res);
    if (this.stage !== 'serving') res.shouldKeepAlive = false;
    res.once('close', () => {
      this.responses.delete(res);
      if (--tracked.inProgress > 0) return;
      tracked.idleSince = performance.now();
      // A response whose headers went out before the drain left its connection open: close it now it is idle.
      if (this.stage !== 'serving') socket.end();
    });
  }

  /** The server starts stopping: every response not yet begun closes its connection once written. */
  drain(): void {
    if (this.stage !== 'serving') return;
    this.stage = 'draining';
    for (const res of this.responses) if (!res.headersSent) res.shouldKeepAlive = false;
  }

  /**
   * Closes the port and each connection once it is idle; resolves when every connection has closed, or after
   * `graceMs` (`destroyAll()` ends what is left).
   */
  close(graceMs: number): Promise<void> {
    this.drain();
    this.stage = 'closing';
    // net.Server's close, not http.Server's: that one also drops at once every connection without a request in
    // progress, including those whose first request is on its way, and their clients would see a reset.
    Server.prototype.close.call(this.server);
    const now = performance.now();
    for (const [socket, carrier] of this.carriers) {
      if (carrier.inProgress > 0) continue;
      const linger = carrier.idleSince + IDLE_LINGER_MS - now;
      if (linger <= 0) socket.end();
      else setTimeout(() => carrier.inProgress === 0 && socket.end(), linger).unref();
    }
    if (this.sockets.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.onAllClosed = undefined;
        resolve();
      };
      const timer = setTimeout(done, graceMs);
      this.onAllClosed = done;
    });
  }

  /** Ends every connection now, finished or not. */
  destroyAll(): void {
    for (const socket of this.carriers.keys()) socket.destroy();
    for (const socket of this.sockets) socket.destroy();
  }
}
