/**
 * The inspector of a server's front-end threads, from the thread that started the server: one session on this
 * thread attaches to each worker (the inspector's NodeWorker domain), so that a benchmark or a test can read each
 * front-end thread's heap (evaluate an expression, take a snapshot, query its objects) without changing the server
 * to be measured. bench:flood and test/integration/front-end-retention.test.ts use it.
 */
import { Session } from 'node:inspector';

/** A front-end thread's name, as the server names its workers: `tstriton-fe-<i>`. */
const FRONT_END = /tstriton-fe-\d+/;

/** How long a thread may take to answer (a heap snapshot of a few hundred MB included). */
const REPLY_MS = 120_000;

interface Waiting {
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** Takes the events the thread sends meanwhile (a heap snapshot's chunks). */
  events?: (method: string, params: unknown) => void;
}

export class ThreadInspector {
  private readonly session = new Session();
  /** The front-end threads by name, and the session the inspector gave each. */
  private readonly sessions = new Map<string, string>();
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  private constructor() {}

  /** Attaches to this process's worker threads (those running now, and those that start later). */
  static async attach(): Promise<ThreadInspector> {
    const inspector = new ThreadInspector();
    const { session } = inspector;
    session.connect();
    session.on('NodeWorker.attachedToWorker', (m) => {
      const { sessionId, workerInfo } = m.params as { sessionId: string; workerInfo: { title: string } };
      const name = FRONT_END.exec(workerInfo.title)?.[0];
      if (name) inspector.sessions.set(name, sessionId);
    });
    session.on('NodeWorker.detachedFromWorker', (m) => {
      const { sessionId } = m.params as { sessionId: string };
      for (const [name, id] of inspector.sessions) if (id === sessionId) inspector.sessions.delete(name);
    });
    session.on('NodeWorker.receivedMessageFromWorker', (m) => inspector.fromThread((m.params as { message: string }).message));
    await inspector.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
    return inspector;
  }

  /** The front-end threads attached, by name, in order. */
  frontEnds(): string[] {
    return [...this.sessions.keys()].sort();
  }

  /** Sends `method` to the thread named `thread` and resolves with its result; `events` takes what it sends meanwhile. */
  send<T>(thread: string, method: string, params: object = {}, events?: Waiting['events']): Promise<T> {
    const sessionId = this.sessions.get(thread);
    if (sessionId === undefined) return Promise.reject(new Error(`no front-end thread ${thread} (attached: ${this.frontEnds().join(', ')})`));
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, events });
      // A reply that never comes fails the call rather than leaving its caller waiting.
      timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`no answer to ${method} from ${thread} within ${REPLY_MS / 1000} s`));
      }, REPLY_MS);
    }).finally(() => clearTimeout(timer));
    this.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify({ id, method, params }) }).catch((err: unknown) => this.waiting.get(id)?.reject(err as Error));
    return reply;
  }

  /** Evaluates `expression` in the thread and resolves with its value (as JSON carries it). */
  async evaluate<T>(thread: string, expression: string): Promise<T> {
    const r = await this.send<{ result: { value: T }; exceptionDetails?: { text: string } }>(thread, 'Runtime.evaluate', { expression, returnByValue: true });
    if (r.exceptionDetails) throw new Error(`${thread}: ${expression}: ${r.exceptionDetails.text}`);
    return r.result.value;
  }

  /** Detaches from every thread. */
  close(): void {
    for (const w of this.waiting.values()) w.reject(new Error('the inspector was closed'));
    this.waiting.clear();
    this.session.disconnect();
  }

  private post(method: string, params: object): Promise<unknown> {
    return new Promise((resolve, reject) => this.session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
  }

  private fromThread(message: string): void {
    const m = JSON.parse(message) as { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message: string } };
    if (m.id === undefined) {
      for (const w of this.waiting.values()) w.events?.(m.method ?? '', m.params);
      return;
    }
    const w = this.waiting.get(m.id);
    this.waiting.delete(m.id);
    if (m.error) w?.reject(new Error(m.error.message));
    else w?.resolve(m.result);
  }
}
