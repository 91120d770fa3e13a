/** Where the load threads connect, and how: everything a lane needs that can cross to a worker thread. */
export interface ConnectionTarget {
  readonly protocol: 'http' | 'grpc';
  readonly host: string;
  readonly port: number;
  /** TLS (HTTPS, or gRPC over TLS), PEM text of each file given. */
  readonly tls?: TargetTls;
  /** gRPC: ModelStreamInfer, one stream per lane, instead of ModelInfer calls. */
  readonly streaming?: boolean;
  /** gRPC metadata sent with every call (HTTP headers are part of the pre-encoded requests). */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** TLS settings of the load's connections. */
export interface TargetTls {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  /** HTTPS: check the server's certificate (`--ssl-https-verify-peer`, default true). */
  readonly verifyPeer: boolean;
  /** HTTPS: check the certificate's name against the host (`--ssl-https-verify-host`, default true). */
  readonly verifyHost: boolean;
}
