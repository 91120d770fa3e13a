import type { ErrorCode } from '../../base/errors';
import { errorResponses } from './error-responses';
import type { OpenApiObject } from './json-schema';
import type { DocumentSecurity } from './security';

/** One operation of a document, before its error responses and security are added. */
export interface OperationSpec {
  readonly summary: string;
  readonly description?: string;
  readonly tags: readonly string[];
  readonly parameters?: readonly OpenApiObject[];
  readonly requestBody?: OpenApiObject;
  /** The answers that are not errors, by status. */
  readonly ok: Record<string, OpenApiObject>;
  /** The error codes it answers with, beside a fault, a stopping server and (when restricted) 403. */
  readonly errors?: readonly ErrorCode[];
}

/** The `paths` of a document, operation by operation, each with its errors and the security its API group needs. */
export class PathsBuilder {
  readonly paths: Record<string, OpenApiObject> = {};

  constructor(private readonly security: DocumentSecurity) {}

  /** Adds `method` on `path` (a path template: `{model_name}`); its `operationId` is `id`. */
  add(path: string, method: 'get' | 'post', id: string, spec: OperationSpec): void {
    const security = this.security.requirement(path);
    const { ok, errors = [], ...rest } = spec;
    const item = (this.paths[path] ??= {});
    item[method] = {
      operationId: id,
      ...rest,
      responses: { ...ok, ...errorResponses(errors, security !== undefined) },
      ...(security && { security }),
    };
  }
}

/** A path parameter of type string. */
export function pathParameter(name: string, description: string, values?: readonly string[]): OpenApiObject {
  return { name, in: 'path', required: true, description, schema: { type: 'string', ...(values && values.length > 0 && { enum: values }) } };
}

/** An answer with no body. */
export function emptyAnswer(description: string): OpenApiObject {
  return { description };
}
