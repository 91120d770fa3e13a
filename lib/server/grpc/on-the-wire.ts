import type * as http2 from 'node:http2';

/**
 * Runs a call's `release` (which lets go of what its response was written from) once the response's bytes have
 * left the process.
 *
 * node:http2 hands what a stream writes to nghttp2 without copying it, and its write callback ('finish') comes
 * once nghttp2 has the bytes, which can be long before the socket has sent them: a large message waits for the
 * client's flow-control window, and a slow client leaves the last of it in the socket's queue. A buffer whose
 * last reference goes at 'finish' (a response tensor on a front-end thread, which nothing else holds) can then be
 * collected while the connection still reads it, and the connection sends freed memory or stalls for good.
 *
 * So what a call wrote stays referenced until its stream has closed (nghttp2 closes it once it has taken the
 * stream's last frame) and the client has then answered a PING: a client answers a PING once it has read what
 * came before it on the connection, and nghttp2 sends the PING after the frames it has already taken. One PING
 * at a time per connection covers every stream closed before it went out. A connection that closes first lets
 * everything go (its socket sends nothing more).
 */
export function releaseOnceSent(stream: http2.ServerHttp2Stream, held: unknown, release?: () => void): void {
  // Each release runs once (afterClose or the connection's end); `held` stays reachable from it until then.
  const letGo = (): void => {
    held = undefined;
    release?.();
  };
  const session = stream.session;
  if (session === undefined || session.destroyed) return letGo();
  const keeper = keeperOf(session);
  if (stream.closed || stream.destroyed) keeper.afterClose(letGo);
  else stream.once('close', () => keeper.afterClose(letGo));
}

/** What one connection holds: the releases waiting for the next PING, and those waiting for the one in flight. */
class SessionKeeper {
  private waiting: (() => void)[] = [];
  private inFlight: (() => void)[] | undefined;
  /** Releases whose PING could not be sent: the connection's 'close' runs them. */
  private unconfirmed: (() => void)[] = [];
  private ended = false;

  constructor(private readonly session: http2.Http2Session) {
    session.once('close', () => this.end());
  }

  afterClose(release: () => void): void {
    if (this.ended || this.session.destroyed) {
      release();
      return;
    }
    this.waiting.push(release);
    if (this.inFlight === undefined) this.ping();
  }

  private ping(): void {
    const batch = this.waiting;
    this.waiting = [];
    this.inFlight = batch;
    const settle = (answered: boolean): void => {
      if (this.inFlight !== batch) return;
      this.inFlight = undefined;
      if (!answered && !this.session.destroyed) {
        // Not sent, or cancelled: the connection is closing, and its 'close' lets go of the batch.
        this.unconfirmed.push(...batch);
        return;
      }
      runAll(batch);
      if (this.waiting.length > 0) this.ping();
    };
    let sent: boolean | undefined;
    try {
      // true: sent; undefined: the connection is closing (the callback then says so); false: not sent.
      sent = this.session.ping((err) => settle(err === null));
    } catch {
      sent = false;
    }
    if (sent === false) settle(false);
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    const all = [...(this.inFlight ?? []), ...this.waiting, ...this.unconfirmed];
    this.inFlight = undefined;
    this.waiting = [];
    this.unconfirmed = [];
    runAll(all);
  }
}

const keepers = new WeakMap<http2.Http2Session, SessionKeeper>();

function keeperOf(session: http2.Http2Session): SessionKeeper {
  let keeper = keepers.get(session);
  if (keeper === undefined) {
    keeper = new SessionKeeper(session);
    keepers.set(session, keeper);
  }
  return keeper;
}

function runAll(releases: readonly (() => void)[]): void {
  for (const release of releases) release();
}
