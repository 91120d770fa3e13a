import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server, type Socket } from 'node:net';

/**
 * How long a closing server keeps an idle kept-alive connection open after its last response. A client that
 * had that response may be sending its next request on the connection just then; closing the connection under
 * that request would reset it, so it is given this long to arrive (and be answered 503).
 */
const IDLE_LINGER_MS = 100;

/**
 * How long a closing server waits for the first request of a connection that has sent none. A client that
 * connected just before the port closed sends it within this; a pooling client (fetch, undici) that opened a spare
 * connection would otherwise hold the stop until its own keep-alive timeout (4 s) or the grace.
 */
const FIRST_REQUEST_LINGER_MS = 1000;

/** What the drain knows of a connection that has carried requests. */
interface Carrier {
  /** Exchanges in progress (pipelining may make it more than one). */
  inProgress: number;
  /** When its last response was done (`performance.now()`). */
  idleSince: number;
}

/**
 * The connections of the HTTP endpoint, tracked so that a stopping server closes each one between two
 * exchanges, never under one: no client sees a reset under a request.
 *
 * Stopping has two steps. `drain()` (the server starts stopping; in-flight inference finishes; the port stays
 * open): the response to every request that arrives from then on says `Connection: close`, and its connection
 * closes once it is written, so a keep-alive client sends nothing more on it. Responses already under way keep
 * their connection open: their client's next request arrives on it and gets its 503 there, rather than racing a
 * new connection against the port's close. `close()` (in-flight work is done): the port closes; a request that
 * still arrives on an open connection is refused (`closing`: 503, `Connection: close`); a connection closes once
 * it has no exchange in progress (a response being written is finished first), an idle one after its linger; a
 * connection whose first request has not arrived yet (a client that connected just before) is waited for, up to
 * FIRST_REQUEST_LINGER_MS.
 */
export class ConnectionDrain {
  /** Every open connection (for HTTPS, the TCP socket under the TLS one). */
  private readonly sockets = new Set<Socket>();
  /** Connections that have carried a request. */
  private readonly carriers = new Map<Socket, Carrier>();
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

  /** Counts an exchange on its connection until its response is done; once stopping, the response closes the connection. */
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
    if (this.stage !== 'serving') res.shouldKeepAlive = false;
    res.once('close', () => {
      if (--tracked.inProgress > 0) return;
      tracked.idleSince = performance.now();
      if (this.stage === 'closing') this.closeWhenIdle(socket, tracked);
    });
  }

  /** The server starts stopping: the response to every request from now on closes its connection. */
  drain(): void {
    if (this.stage === 'serving') this.stage = 'draining';
  }

  /**
   * Closes the port, and each connection once it is idle; resolves when every connection has closed, or after
   * `graceMs` (`destroyAll()` ends what is left).
   */
  close(graceMs: number): Promise<void> {
    this.stage = 'closing';
    // net.Server's close, not http.Server's: that one also drops at once every connection without a request in
    // progress, including those whose next or first request is on its way, and their clients would see a reset.
    Server.prototype.close.call(this.server);
    for (const [socket, carrier] of this.carriers) if (carrier.inProgress === 0) this.closeWhenIdle(socket, carrier);
    for (const socket of this.sockets) {
      if (!this.carriers.has(socket)) setTimeout(() => !this.carriers.has(socket) && socket.end(), FIRST_REQUEST_LINGER_MS).unref();
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

  /** Ends an idle connection once its linger has passed, unless a request has come on it meanwhile. */
  private closeWhenIdle(socket: Socket, carrier: Carrier): void {
    const linger = carrier.idleSince + IDLE_LINGER_MS - performance.now();
    if (linger <= 0) socket.end();
    else setTimeout(() => carrier.inProgress === 0 && socket.end(), linger).unref();
  }
}
