import * as net from 'node:net';
import * as tls from 'node:tls';

/** An answer read off a raw connection. */
export interface RawAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/**
 * A raw keep-alive connection (plain or TLS): requests one after another, each answer read in full by its
 * Content-Length; `ended` says how the server ended it: 'closed' (an orderly close) or the error's code
 * (`ECONNRESET`, `EPIPE`).
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  private how: string | undefined;
  readonly ended: Promise<string>;

  private constructor(private readonly socket: net.Socket) {
    let settle!: (how: string) => void;
    this.ended = new Promise((resolve) => (settle = resolve));
    const end = (how: string): void => {
      this.how ??= how;
      settle(this.how);
      this.wake?.();
    };
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake?.();
    });
    socket.on('end', () => end('closed'));
    socket.on('error', (err: NodeJS.ErrnoException) => end(err.code ?? err.message));
    socket.on('close', () => end('closed'));
  }

  /** Connects to `port` on loopback (over TLS, trusting `ca`, when given); rejects as the connection fails (`ECONNREFUSED`). */
  static open(port: number, ca?: Buffer): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = ca ? tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }) : net.connect(port, '127.0.0.1');
      socket.once(ca ? 'secureConnect' : 'connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Sends one request and reads its answer; rejects if the connection ends first (`ended` then says how). */
  async request(raw: string): Promise<RawAnswer> {
    this.socket.write(raw);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine = '', ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(end + 4 + length);
          return { status: Number(statusLine.split(' ')[1]), headers, body };
        }
      }
      if (this.how !== undefined) throw new Error(`connection ended (${this.how}) before the answer: ${JSON.stringify(this.buffer.toString('latin1'))}`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /** Closes the connection from this side (a FIN: nothing is left unread here). */
  close(): void {
    this.socket.destroy();
  }
}
