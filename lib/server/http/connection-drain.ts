import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server, Socket } from 'node:net';

/**
 * The longest a closing server waits for a request that may be on its way: the first request of a connection that
 * has sent none (a client that connected just before the port closed sends it within this), and the next request
 * of an idle kept-alive connection. A pooling client (fetch, undici) that keeps a connection it will not use again
 * would otherwise hold the stop until its own keep-alive timeout (4 s, or the server's 65 s) or the grace. It also
 * bounds how long the port stays open once closing begins, and how long a closed connection waits for its client
 * to close its side.
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

/**
 * How long the port must have been quiet (no connection accepted, no answer finished, no connection closed) before
 * it closes. Closing a listening socket resets the connections in its accept queue, which the kernel has already
 * accepted for their clients: a client told `Connection: close` opens its next connection a moment after it closes
 * the last one, and that connection must be accepted and answered, or refused, never queued and reset.
 */
const PORT_QUIET_MS = 100;

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
  /** Its latest exchange while in progress: the response, and whether its request asked to keep the connection. */
  latest: { readonly res: ServerResponse; readonly keepAlive: boolean } | undefined;
}

/** Responses with a request pipelined behind them on their connection, waiting for its own answer. */
const FOLLOWED = new WeakSet<ServerResponse>();

/**
 * Marks the answer that refuses a request because the server is stopping as the last on its connection
 * (`Connection: close`), unless a request pipelined behind it waits for its answer: that one's closes it instead.
 */
export function closeAfterRefusal(res: ServerResponse): void {
  if (!FOLLOWED.has(res)) res.shouldKeepAlive = false;
}

/**
 * The connections of the HTTP endpoint, tracked so that a stopping server closes each one between two
 * exchanges, never under one, and never with a request of its client unread: no client sees a reset, or a
 * connection closed under a request it sent while told to keep the connection.
 *
 * Stopping has two steps. `drain()` (the server starts stopping; in-flight inference finishes; the port stays
 * open): the response to every request that arrives from then on says `Connection: close`, and its connection
 * closes once it is written, so a keep-alive client sends nothing more on it. Responses already under way keep
 * their connection open: their client's next request arrives on it and gets its 503 there. `close()` (in-flight work
 * is done): a request that still arrives is refused (`closing`: 503, `Connection: close`), but its answer waits
 * (`afterPortClosed`) until the port has closed. The port closes once it is quiet (PORT_QUIET_MS without a
 * connection accepted, an answer finished or a connection closed, no response being written and no client still to
 * close a connection it was told to close; at most LINGER_MAX_MS): a client answered `Connection: close` opens its
 * next connection right after, and closing the port with that connection in its accept queue would reset it.
 * Holding the answers stops clients that reconnect on every 503 from keeping the port busy. Then the held answers
 * go out, and their clients' next connections are refused. A connection closes once it has no exchange in progress;
 * an idle one, whose client was told to keep it, once it is unlikely that a request is on its way (its linger:
 * PAUSE_FACTOR times its client's longest pause, within IDLE_LINGER_MIN_MS and LINGER_MAX_MS); a connection whose
 * first request has not arrived yet is waited for, up to LINGER_MAX_MS after the port closed.
 *
 * Every close during the stop is made in two steps (RFC 9112 §9.6): the server's side first (a FIN after the last
 * answer), then, once the client has closed its side, the socket, or after LINGER_MAX_MS. Closing a socket with
 * bytes unread (a request pipelined behind the answer that closes it) or exiting while one is open would reset it,
 * and a reset may discard the answer before its client reads it. Only `destroyAll()`, after the grace, cuts.
 */
export class ConnectionDrain {
  /** Every open connection (for HTTPS, the TCP socket under the TLS one). */
  private readonly sockets = new Set<Socket>();
  /** Connections that have carried a request. */
  private readonly carriers = new Map<Socket, Carrier>();
  /** Connections whose server side is closed, waiting for their client to close its side. */
  private readonly halfClosed = new Set<Socket>();
  /** Refusals waiting for the port to close before they are written. */
  private readonly held = new Map<ServerResponse, () => void>();
  /** Exchanges in progress on every connection. */
  private exchanges = 0;
  private stage: 'serving' | 'draining' | 'closing' = 'serving';
  private portOpen = true;
  /** When a connection was last accepted, an exchange finished, or a connection closed (`performance.now()`). */
  private lastActivity = 0;
  /** When the port closes at the latest, once closing. */
  private portDeadline = Infinity;
  private portTimer: NodeJS.Timeout | undefined;
  private onAllClosed: (() => void) | undefined;

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      this.activity();
      socket.once('close', () => {
        this.sockets.delete(socket);
        this.activity();
        if (this.sockets.size === 0) this.onAllClosed?.();
      });
    });
  }

  /** True once closing: a request arriving now is refused, and its connection closed after the answer. */
  get closing(): boolean {
    return this.stage === 'closing';
  }

  /**
   * Counts an exchange on its connection until its response is done; once stopping, the response closes the
   * connection. False when the connection's server side is already closed (a request pipelined behind the answer
   * that closed it): no answer can go out, and the request is read and dropped.
   */
  track(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket as Socket;
    if (this.halfClosed.has(socket)) {
      req.resume();
      return false;
    }
    const carrier = this.carrierOf(socket);
    // A pause between two exchanges: from the last response done (none yet at the first) to this request.
    if (carrier.inProgress === 0 && carrier.idleSince > 0) carrier.longestPause = Math.max(carrier.longestPause, performance.now() - carrier.idleSince);
    const before = carrier.latest;
    if (before !== undefined) {
      // Pipelined behind an answer not yet written: that answer keeps the connection (if its request asked to) for
      // this one's, which the client has sent already and must get.
      FOLLOWED.add(before.res);
      if (this.stage !== 'serving' && !before.res.headersSent) before.res.shouldKeepAlive = before.keepAlive;
    }
    carrier.latest = { res, keepAlive: res.shouldKeepAlive };
    carrier.inProgress++;
    this.exchanges++;
    if (this.stage !== 'serving') res.shouldKeepAlive = false;
    res.once('close', () => {
      if (carrier.latest?.res === res) carrier.latest = undefined;
      if (this.stage !== 'serving' && res.shouldKeepAlive) carrier.keptDuringStop = true;
      this.held.delete(res);
      this.exchanges--;
      this.activity();
      if (--carrier.inProgress > 0) return;
      carrier.idleSince = performance.now();
      if (this.stage === 'closing') this.closeWhenIdle(socket, carrier);
    });
    return true;
  }

  /**
   * Runs `answer` (the refusal of `res`'s request) once the port has closed: now if it has, or once it is quiet.
   * The refusal's `Connection: close` sends its client to open another connection, which must find the port closed.
   */
  afterPortClosed(res: ServerResponse, answer: () => void): void {
    if (!this.portOpen) return answer();
    this.held.set(res, answer);
    this.closePortWhenQuiet();
  }

  /** The server starts stopping: the response to every request from now on closes its connection. */
  drain(): void {
    if (this.stage === 'serving') this.stage = 'draining';
  }

  /**
   * Closes the port once it is quiet, and each connection once it is idle; resolves when every connection has
   * closed, or after `graceMs` (`destroyAll()` ends what is left).
   */
  close(graceMs: number): Promise<void> {
    this.stage = 'closing';
    this.portDeadline = performance.now() + LINGER_MAX_MS;
    this.closePortWhenQuiet();
    for (const [socket, carrier] of this.carriers) if (carrier.inProgress === 0) this.closeWhenIdle(socket, carrier);
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

  /** Ends every connection now, finished or not; the refusals still held are dropped with theirs. */
  destroyAll(): void {
    this.portOpen = false;
    clearTimeout(this.portTimer);
    this.held.clear();
    for (const socket of this.carriers.keys()) socket.destroy();
    for (const socket of this.sockets) socket.destroy();
  }

  /**
   * The drain's record of a connection, made at its first request. From then on, a response that closes the
   * connection during the stop (node:http calls `destroySoon()` after it) closes it in two steps instead.
   */
  private carrierOf(socket: Socket): Carrier {
    let carrier = this.carriers.get(socket);
    if (carrier === undefined) {
      const created: Carrier = { inProgress: 0, idleSince: 0, longestPause: 0, keptDuringStop: false, latest: undefined };
      this.carriers.set(socket, created);
      socket.once('close', () => this.carriers.delete(socket));
      socket.destroySoon = () => (this.stage === 'serving' ? Socket.prototype.destroySoon.call(socket) : this.halfClose(socket));
      carrier = created;
    }
    return carrier;
  }

  /**
   * Closes a connection's server side (a FIN after what is written) and reads on until the client closes its side,
   * then closes the socket: what the client still sent (a request pipelined behind the last answer) is read and
   * dropped rather than answered by a reset. A client that keeps its side open is cut after LINGER_MAX_MS.
   */
  private halfClose(socket: Socket): void {
    if (this.halfClosed.has(socket) || socket.destroyed) return;
    this.halfClosed.add(socket);
    socket.end();
    if (socket.readableEnded) {
      socket.destroy();
      return;
    }
    // Read on, also if node:http had paused the connection for a pipelined request's answer that will not come.
    // (Only a connection node:http reads: for HTTPS, the socket under TLS is read by TLS.)
    if (this.carriers.has(socket)) socket.resume();
    socket.once('end', () => socket.destroy());
    const cut = setTimeout(() => socket.destroy(), LINGER_MAX_MS).unref();
    socket.once('close', () => {
      clearTimeout(cut);
      this.halfClosed.delete(socket);
    });
  }

  /** Something happened at the port: it is not quiet yet. */
  private activity(): void {
    this.lastActivity = performance.now();
    if (this.stage === 'closing') this.closePortWhenQuiet();
  }

  /**
   * Closes the port once no response is being written but the refusals held for it, no client is still to close a
   * connection it was told to close, and PORT_QUIET_MS have passed since the last activity; or at the deadline.
   */
  private closePortWhenQuiet(polled = false): void {
    if (!this.portOpen) return;
    clearTimeout(this.portTimer);
    const settled = this.exchanges === this.held.size && this.halfClosed.size === 0;
    const at = Math.min(this.portDeadline, settled ? this.lastActivity + PORT_QUIET_MS : Infinity);
    const wait = at - performance.now();
    if (wait > 0) this.portTimer = setTimeout(() => this.closePortWhenQuiet(), wait);
    // Timers run before the event loop polls its sockets: connections may be waiting in the accept queue, unseen.
    // setImmediate runs right after the poll, which accepts them (each one activity that moves the close on).
    else if (!polled) setImmediate(() => this.closePortWhenQuiet(true));
    else this.closePort();
  }

  /** Closes the port, then writes the refusals held for it. */
  private closePort(): void {
    if (!this.portOpen) return;
    this.portOpen = false;
    clearTimeout(this.portTimer);
    // net.Server's close, not http.Server's: that one also drops at once every connection without a request in
    // progress, including those whose next or first request is on its way, and their clients would see a reset.
    Server.prototype.close.call(this.server);
    for (const socket of this.sockets) this.awaitFirstRequest(socket);
    const answers = [...this.held.values()];
    this.held.clear();
    for (const answer of answers) answer();
  }

  /**
   * Closes a connection that has carried no request if its first has not come within LINGER_MAX_MS of the port's
   * close (a client that connected just before sends it within that).
   */
  private awaitFirstRequest(socket: Socket): void {
    if (!this.carriers.has(socket)) setTimeout(() => !this.carriers.has(socket) && this.halfClose(socket), LINGER_MAX_MS).unref();
  }

  /**
   * Ends an idle connection once its linger has passed, unless a request has come on it meanwhile. A connection
   * kept alive by a response of the stop itself gets the longest linger: its client's pauses before the stop say
   * little of how soon it sends again on a machine busy with the stop (the answers of every request in flight).
   */
  private closeWhenIdle(socket: Socket, carrier: Carrier): void {
    const wait = carrier.keptDuringStop ? LINGER_MAX_MS : Math.min(LINGER_MAX_MS, Math.max(IDLE_LINGER_MIN_MS, PAUSE_FACTOR * carrier.longestPause));
    const linger = carrier.idleSince + wait - performance.now();
    if (linger <= 0) this.halfClose(socket);
    else setTimeout(() => carrier.inProgress === 0 && this.halfClose(socket), linger).unref();
  }
}
