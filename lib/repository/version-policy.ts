import { TritonError } from '../base/errors';

/** Triton's `version_policy`: which of a model's version folders are served. */
export type VersionPolicy = { latest: { num_versions: number } } | { all: Record<string, never> } | { specific: { versions: number[] } };

/** Triton's default: the highest version only. */
export const DEFAULT_VERSION_POLICY: VersionPolicy = { latest: { num_versions: 1 } };

/**
 * Reads a `version_policy` field of a config (`undefined` gives the default) and checks it: exactly one of
 * `latest`, `all`, `specific`; `num_versions` ≥ 1; `versions` positive integers.
 */
export function readVersionPolicy(value: unknown, where: string): VersionPolicy {
  if (value === undefined) return DEFAULT_VERSION_POLICY;
  const fail = (why: string): never => {
    throw new TritonError('INVALID_CONFIG', `${where}: version_policy ${why}`);
  };
  if (typeof value !== 'object' || value === null) return fail('must be a message');
  const keys = Object.keys(value);
  if (keys.length !== 1) return fail(`must set exactly one of latest, all, specific; got ${keys.length === 0 ? 'none' : keys.join(', ')}`);
  const v = value as Record<string, Record<string, unknown> | undefined>;
  if (v.latest !== undefined) {
    const n = v.latest.num_versions ?? 1;
    if (!Number.isInteger(n) || (n as number) < 1) fail(`latest.num_versions must be a positive integer, got ${String(n)}`);
    return { latest: { num_versions: n as number } };
  }
  if (v.all !== undefined) return { all: {} };
  if (v.specific !== undefined) {
    const versions = v.specific.versions ?? [];
    if (!Array.isArray(versions) || versions.length === 0 || !versions.every((x) => Number.isInteger(x) && x > 0)) {
      fail('specific.versions must list positive integers');
    }
    return { specific: { versions: [...(versions as number[])] } };
  }
  return fail(`has an unknown policy '${keys[0]}'; expected latest, all or specific`);
}

/**
 * The versions the policy serves among those on disk, ascending. A `specific` version that is not on disk is an
 * error, as in Triton; `latest` takes the highest `num_versions`.
 */
export function servedVersions(policy: VersionPolicy, onDisk: readonly number[], where: string): number[] {
  const sorted = [...onDisk].sort((a, b) => a - b);
  if ('latest' in policy) return sorted.slice(Math.max(0, sorted.length - policy.latest.num_versions));
  if ('all' in policy) return sorted;
  const missing = policy.specific.versions.filter((v) => !sorted.includes(v));
  if (missing.length > 0) {
    throw new TritonError('INVALID_CONFIG', `${where}: version_policy names version ${missing.join(', ')}, which has no folder in the model repository`);
  }
  return sorted.filter((v) => policy.specific.versions.includes(v));
}
