import { timingSafeEqual } from 'node:crypto';
import { TritonError, invalidConfig } from '../base/errors';

/** Triton's API groups, as `--http-restricted-api` and `--grpc-restricted-protocol` name them. */
export const API_GROUPS = ['health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace', 'logging'] as const;

/** One API group. */
export type ApiGroup = (typeof API_GROUPS)[number];

/** The header (gRPC: metadata key) and value a restricted group needs. */
export interface Restriction {
  readonly header: string;
  readonly value: string;
}

/** gRPC clients send a restricted protocol's key under this prefix, as Triton expects. */
export const GRPC_RESTRICTED_PREFIX = 'triton-grpc-protocol-';

/**
 * Which API groups need which header, parsed from Triton's syntax: `<api>[,<api>...]:<key>=<value>`, several
 * specifications separated by `;` (Triton repeats the flag instead). Each group may appear in one
 * specification only. Values are compared in constant time.
 */
export class RestrictedApis {
  private constructor(private readonly byGroup: ReadonlyMap<ApiGroup, Restriction & { bytes: Buffer }>) {}

  /** No group restricted. */
  static readonly NONE = new RestrictedApis(new Map());

  /**
   * Parses `spec` (the value of `option`, named in errors); `headerPrefix` is put before every key (gRPC's
   * `triton-grpc-protocol-`).
   */
  static parse(spec: string | undefined, option: string, headerPrefix = ''): RestrictedApis {
    if (spec === undefined || spec.trim() === '') return RestrictedApis.NONE;
    const byGroup = new Map<ApiGroup, Restriction & { bytes: Buffer }>();
    for (const part of spec.split(';')) {
      const text = part.trim();
      if (text === '') continue;
      const m = /^([^:]+):([^=]+)=(.*)$/.exec(text);
      if (!m) throw invalidConfig(`invalid ${option}: '${text}' is not of the form <api>[,<api>...]:<key>=<value>`);
      const [, apis, key, value] = m as unknown as [string, string, string, string];
      const header = `${headerPrefix}${key.trim().toLowerCase()}`;
      if (!/^[a-z0-9_.-]+$/.test(header)) throw invalidConfig(`invalid ${option}: '${key.trim()}' is not a valid header name`);
      for (const raw of apis.split(',')) {
        const api = raw.trim();
        if (!(API_GROUPS as readonly string[]).includes(api)) {
          throw invalidConfig(`invalid ${option}: unknown restricted api '${api}'; the APIs are ${API_GROUPS.join(', ')}`);
        }
        if (byGroup.has(api as ApiGroup)) throw invalidConfig(`invalid ${option}: restricted api '${api}' can not be specified in multiple config groups`);
        byGroup.set(api as ApiGroup, { header, value, bytes: Buffer.from(value, 'utf8') });
      }
    }
    return new RestrictedApis(byGroup);
  }

  /** True when at least one group is restricted. */
  get any(): boolean {
    return this.byGroup.size > 0;
  }

  /** The restriction on `group`, if any. */
  restriction(group: ApiGroup): Restriction | undefined {
    const r = this.byGroup.get(group);
    return r && { header: r.header, value: r.value };
  }

  /**
   * The header a request to `group` lacks, or undefined when it may go on. `headerOf` reads a request header
   * (lower-case name); a header sent several times never matches.
   */
  missingHeader(group: ApiGroup | undefined, headerOf: (name: string) => unknown): string | undefined {
    if (group === undefined) return undefined;
    const r = this.byGroup.get(group);
    if (!r) return undefined;
    const sent = headerOf(r.header);
    if (typeof sent !== 'string') return r.header;
    const bytes = Buffer.from(sent, 'utf8');
    return bytes.length === r.bytes.length && timingSafeEqual(bytes, r.bytes) ? undefined : r.header;
  }
}

/** Triton's answer over HTTP to a request without a restricted API's header (403). */
export function httpRestrictedError(header: string): TritonError {
  return new TritonError('RESTRICTED', `This API is restricted, expecting header '${header}'`);
}

/** Triton's answer over gRPC to a call without a restricted protocol's metadata (UNAVAILABLE). */
export function grpcRestrictedError(header: string): TritonError {
  return new TritonError('RESTRICTED', `This protocol is restricted, expecting header '${header}'`);
}

/** `/v2/models/{m}/docs`: a model's API reference page. */
const MODEL_DOCS_PAGE = /^\/v2\/models\/[^/]+\/docs$/;

/**
 * The API group of an HTTP request path (matched case-insensitively, as the router matches), or undefined
 * for paths that are not Triton's (users' own routes, 404s).
 */
export function httpApiGroup(path: string): ApiGroup | undefined {
  const p = path.toLowerCase();
  if (p === '/v2') return 'metadata';
  if (!p.startsWith('/v2/')) return undefined;
  if (p.startsWith('/v2/health/')) return 'health';
  if (p.startsWith('/v2/repository')) return 'model-repository';
  if (p.startsWith('/v2/systemsharedmemory') || p.startsWith('/v2/cudasharedmemory')) return 'shared-memory';
  if (p.startsWith('/v2/logging')) return 'logging';
  if (p.startsWith('/v2/trace') || p.endsWith('/trace/setting')) return 'trace';
  if (!p.startsWith('/v2/models')) return undefined;
  // A model's reference page is open (its document, `.../docs/dataplane.json`, is metadata): a browser cannot send
  // the header when it opens it, and the page asks for the key itself.
  if (MODEL_DOCS_PAGE.test(p)) return undefined;
  if (p === '/v2/models/stats' || p.endsWith('/stats')) return 'statistics';
  if (p.endsWith('/infer') || p.endsWith('/generate') || p.endsWith('/generate_stream')) return 'inference';
  if (p.endsWith('/ready')) return 'health';
  if (p.endsWith('/config')) return 'model-config';
  return 'metadata';
}

/** The API group of each RPC of `inference.GRPCInferenceService` and `grpc.health.v1.Health`. */
export const GRPC_API_GROUPS: Readonly<Record<string, ApiGroup>> = {
  ServerLive: 'health',
  ServerReady: 'health',
  ModelReady: 'health',
  Check: 'health',
  Watch: 'health',
  ServerMetadata: 'metadata',
  ModelMetadata: 'metadata',
  ModelInfer: 'inference',
  ModelStreamInfer: 'inference',
  ModelConfig: 'model-config',
  ModelStatistics: 'statistics',
  RepositoryIndex: 'model-repository',
  RepositoryModelLoad: 'model-repository',
  RepositoryModelUnload: 'model-repository',
  SystemSharedMemoryStatus: 'shared-memory',
  SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory',
  CudaSharedMemoryUnregister: 'shared-memory',
  TraceSetting: 'trace',
  LogSettings: 'logging',
};

