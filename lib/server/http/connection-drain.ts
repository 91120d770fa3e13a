import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server, type Socket } from 'node:net';

/**
 * The longest a closing server waits for a request that may be on its way: the first request of a connection that
 * has sent none (a client that connected just before the port closed sends it within this), and the next request
 * of an idle kept-alive connection. A pooling client (fetch, undici) that keeps a connection it will not use again
 * would otherwise hold the stop until its own keep-alive timeout (4 s, or the server's 65 s) or the grace.
 */
const LINGER_MAX_MS = 1000;

/**
 * The shortest time a closing server keeps an idle kept-alive connection open after its last response, for the
 * next request its client may be sending on it just then.
 */
const IDLE_LINGER_MIN_MS = 100;

/**
 * An idle kept-alive connection is kept open this many times the longest pause its client has made between a
 * response and its next request (within the bounds above). HTTP/1.1 has no way to tell a client that an idle
 * connection is closing except closing it, and a close that crosses the client's next request fails that request
 * (a reset, "socket hang up"). A client sending in a loop, whose pauses grow on a busy machine, gets a linger that
 * grows with them; one that sent a request or two back to back (a test's fetch) gets the shortest.
 */
const PAUSE_FACTOR = 8;

/** What the drain knows of a connection that has carried requests. */
interface Carrier {
  /** Exchanges in progress (pipelining may make it more than one). */
  inProgress: number;
  /** When its last response was done (`performance.now()`). */
  idleSince: number;
  /** The longest time, in ms, from a response done to the next request's arrival on this connection. */
  longestPause: number;
  /**
   * Its last response was under way when the stop began, and told its client to keep the connection: a client
   * sending in a loop sends its next request on it, whenever it gets to it.
   */
  keptDuringStop: boolean;
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
 * it has no exchange in progress (a response being written is finished first); an idle one, whose client was told
 * to keep it, once it is unlikely that a request is on its way (its linger: PAUSE_FACTOR times its client's
 * longest pause, within IDLE_LINGER_MIN_MS and LINGER_MAX_MS); a connection whose first request has not arrived
 * yet (a client that connected just before) is waited for, up to LINGER_MAX_MS. Every close is an orderly one
 * (`end()`: the client reads to the end), never a reset; only `destroyAll()`, after the grace, cuts.
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
      const created: Carrier = { inProgress: 0, idleSince: 0, longestPause: 0, keptDuringStop: false };
      this.carriers.set(socket, created);
      socket.once('close', () => this.carriers.delete(socket));
      carrier = created;
    } else if (carrier.inProgress === 0) {
      carrier.longestPause = Math.max(carrier.longestPause, performance.now() - carrier.idleSince);
    }
    const tracked = carrier;
    tracked.inProgress++;
    if (this.stage !== 'serving') res.shouldKeepAlive = false;
    res.once('close', () => {
      if (this.stage !== 'serving' && res.shouldKeepAlive) tracked.keptDuringStop = true;
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
      if (!this.carriers.has(socket)) setTimeout(() => !this.carriers.has(socket) && socket.end(), LINGER_MAX_MS).unref();
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

  /**
   * Ends an idle connection once its linger has passed, unless a request has come on it meanwhile. A connection
   * kept alive by a response of the stop itself gets the longest linger: its client's pauses before the stop say
   * little of how soon it sends again on a machine busy with the stop (the answers of every request in flight).
   */
  private closeWhenIdle(socket: Socket, carrier: Carrier): void {
    const wait = carrier.keptDuringStop ? LINGER_MAX_MS : Math.min(LINGER_MAX_MS, Math.max(IDLE_LINGER_MIN_MS, PAUSE_FACTOR * carrier.longestPause));
    const linger = carrier.idleSince + wait - performance.now();
    if (linger <= 0) socket.end();
    else setTimeout(() => carrier.inProgress === 0 && socket.end(), linger).unref();
  }
}
