import { TritonError, tritonError } from '../base/errors';
import type { ModelLookup, ModelState } from './model-view';

/** What picking a version reads of a model version: its number and where it is in its life. */
interface Versioned {
  readonly version: string;
  readonly state: ModelState;
}

/**
 * The version of a model that serves a request, picked as Triton picks it: the version the request names, which
 * must be at ready state; with none named, the highest version at ready state (so a version still loading, or
 * unloaded, leaves the requests to the one below it). `versions` holds every version of the name. `failed` holds the
 * versions a load of the name tried and failed to build before any version of it served (its config was valid):
 * Triton keeps those in its model life cycle, unavailable, so the name is known and such a version is there but not
 * ready; it is undefined for every other name.
 *
 * @throws TritonError `MODEL_NOT_FOUND` for a name the server does not know; `MODEL_VERSION_NOT_FOUND` when no
 * version is ready and the request names none, or the version it names is not there; `MODEL_VERSION_NOT_READY`
 * when the version it names is there but not ready.
 */
export function servingVersion<T extends Versioned>(name: string, version: string | undefined, versions: Iterable<T>, failed: readonly string[] | undefined): T {
  const found = pick(name, version, versions, true, failed !== undefined);
  if (!version) {
    if (found === undefined) throw tritonError('noReadyVersion', { model: name });
    return found;
  }
  if (found === undefined) throw tritonError(failed?.includes(version) ? 'versionUnavailable' : 'unknownVersion', { model: name, version });
  if (found.state !== 'READY') throw tritonError('versionUnavailable', { model: name, version });
  return found;
}

/**
 * The model version that describes a name whatever its state (the one named, or the highest): what an ensemble
 * takes its step's tensors from, and what a model's reference page shows. `failed` as for `servingVersion`.
 *
 * @throws TritonError `MODEL_NOT_FOUND` for a name the server does not know; `MODEL_VERSION_NOT_FOUND` for a
 * version the name does not have, or a known name with no version at all.
 */
export function describedVersion<T extends Versioned>(name: string, version: string | undefined, versions: Iterable<T>, failed: readonly string[] | undefined): T {
  const found = pick(name, version, versions, false, failed !== undefined);
  if (found !== undefined) return found;
  throw version ? tritonError('unknownVersion', { model: name, version }) : tritonError('noReadyVersion', { model: name });
}

/**
 * The version named, or with none named the highest one (at ready state, with `readyOnly`); undefined when there is
 * none such.
 *
 * @throws TritonError `MODEL_NOT_FOUND` when `versions` is empty and the name is not `known`: a name the server does
 * not know.
 */
function pick<T extends Versioned>(name: string, version: string | undefined, versions: Iterable<T>, readyOnly: boolean, known: boolean): T | undefined {
  let seen = false;
  let found: T | undefined;
  for (const m of versions) {
    seen = true;
    if (version) {
      if (m.version === version) return m;
    } else if ((!readyOnly || m.state === 'READY') && (found === undefined || Number(m.version) > Number(found.version))) {
      found = m;
    }
  }
  if (!seen && !known) throw tritonError('unknownModel', { model: name });
  return found;
}

/**
 * Whether the model version a readiness probe names is ready: false for a known model whose version is not
 * there or not ready (Triton's ready endpoints answer "not ready" rather than the lookup's error); a name the
 * server does not know still fails with `MODEL_NOT_FOUND`.
 */
export function versionReady(models: ModelLookup, name: string, version?: string): boolean {
  try {
    return models.get(name, version).ready;
  } catch (err) {
    if (err instanceof TritonError && (err.code === 'MODEL_VERSION_NOT_FOUND' || err.code === 'MODEL_VERSION_NOT_READY')) return false;
    throw err;
  }
}
