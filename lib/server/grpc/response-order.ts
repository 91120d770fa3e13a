/** Writes one message on the stream; a promise when its write buffer is full, which settles on 'drain' or close. */
export type StreamWrite<M> = (message: M) => Promise<void> | undefined;

declare const PLACE: unique symbol;

/** One request's place in its stream's response order: opaque to callers, who pass it back to the order. */
export interface Place {
  readonly [PLACE]: true;
}

/** A place as the order links it. */
interface Link<M> {
  prev: Link<M> | undefined;
  next: Link<M> | undefined;
  /** Still in the order: its answer waits for those before it. False once it left, was written, or the order was cleared. */
  linked: boolean;
  /** It has answered (or finished with nothing to write): it goes as soon as it is first. */
  answered: boolean;
  /** What it answered while a request before it had not; each with the resolver of the promise its writer waits on. */
  held: { message: M; written: () => void }[] | undefined;
}

/**
 * The order a `ModelStreamInfer` stream answers in, as Triton's stream handler keeps it: the answer of a request for a
 * model that is not decoupled (its response, or its error, whichever stage found it) is written only after every
 * such request that arrived before it has been answered, even when it is ready first — a slow model then a fast one,
 * or a request refused at once behind one still running, or, on front-end threads, an error found while the thread
 * decodes behind one the core answers later. Clients match a regular model's responses to their requests by order.
 *
 * A request for a decoupled model leaves the order as soon as its model is known: its responses go out as produced,
 * and the requests behind it do not wait for it. A request whose model is never found (an unknown model, a stopping
 * server) stays in the order, as in Triton, where such a request is not known to be decoupled.
 *
 * What waits is bounded by the requests in flight on the stream: a place is linked only while its request is
 * unanswered or its answer is held, and each holds its one answer. `clear()` (a stream that ends, fails or is
 * cancelled) drops what is held and settles every writer waiting.
 */
export class ResponseOrder<M> {
  /** The oldest place still in the order (its answer goes first), and the newest. */
  private head: Link<M> | undefined;
  private tail: Link<M> | undefined;

  constructor(private readonly send: StreamWrite<M>) {}

  /** A place at the end of the order, for a request that has just arrived. */
  enter(): Place {
    const link: Link<M> = { prev: this.tail, next: undefined, linked: true, answered: false, held: undefined };
    if (this.tail) this.tail.next = link;
    else this.head = link;
    this.tail = link;
    return link as unknown as Place;
  }

  /** Takes `place` out of the order (a decoupled model's request): its messages are written as they come. */
  leave(place: Place): void {
    const link = linkOf<M>(place);
    if (!link.linked) return;
    const first = link === this.head;
    this.unlink(link);
    // The places behind it may have answered already.
    if (first) this.flush();
  }

  /**
   * Writes `message` for `place`: now, when no earlier place in the order is still unanswered, otherwise once they
   * all are. A place in the order answers once (its request's one response, or its error); that answer lets the
   * places behind it go. The promise settles once the message is written and the write buffer has room again.
   */
  write(place: Place, message: M): Promise<void> | undefined {
    const link = linkOf<M>(place);
    if (!link.linked) return this.send(message);
    link.answered = true;
    if (link === this.head) {
      this.unlink(link);
      const written = this.send(message);
      this.flush();
      return written;
    }
    return new Promise<void>((written) => (link.held ??= []).push({ message, written }));
  }

  /** `place`'s request is over: a place that wrote nothing (a response with no outputs) no longer holds back the others. */
  done(place: Place): void {
    const link = linkOf<M>(place);
    if (!link.linked || link.answered) return;
    link.answered = true;
    if (link === this.head) this.flush();
  }

  /** Drops every held message and settles its writer, unwritten: the stream is over. */
  clear(): void {
    for (let link = this.head; link; link = this.head) {
      this.unlink(link);
      for (const h of link.held ?? []) h.written();
      link.held = undefined;
    }
  }

  /** Writes the answers of the places now first, in order, up to the first place still unanswered. */
  private flush(): void {
    for (let link = this.head; link?.answered; link = this.head) {
      this.unlink(link);
      const held = link.held;
      link.held = undefined;
      for (const { message, written } of held ?? []) {
        const full = this.send(message);
        if (full) void full.then(written);
        else written();
      }
    }
  }

  private unlink(link: Link<M>): void {
    if (link.prev) link.prev.next = link.next;
    else this.head = link.next;
    if (link.next) link.next.prev = link.prev;
    else this.tail = link.prev;
    link.prev = link.next = undefined;
    link.linked = false;
  }
}

/** The link behind a place this module handed out. */
function linkOf<M>(place: Place): Link<M> {
  return place as unknown as Link<M>;
}
