/**
 * One connection of a load thread, carrying one request at a time: a keep-alive HTTP/1.1 socket, a gRPC
 * ModelStreamInfer stream, or a ModelInfer call on the thread's shared gRPC channel.
 */
export interface LoadConnection {
  /** Sends pre-encoded `request`; `done` is called once its whole answer is in, with what was wrong, if anything. */
  send(request: Uint8Array, done: (problem?: string) => void): void;
  close(): void;
}

/** Opens a connection to the load's server. */
export type ConnectionFactory = () => LoadConnection;
