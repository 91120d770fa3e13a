/**
 * The JSON Schema (2020-12, the dialect of OpenAPI 3.1) and OpenAPI objects the document builders write, as plain
 * data: what `JSON.stringify` sends and a validator reads.
 */

/** A JSON Schema object, or `false` (nothing is valid). */
export type JsonSchema = { readonly [keyword: string]: unknown } | false;

/** An OpenAPI 3.1 operation, path item or any other object of the document. */
export type OpenApiObject = Record<string, unknown>;

/** An OpenAPI 3.1 document. */
export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: OpenApiObject;
  readonly paths: Record<string, OpenApiObject>;
  readonly components: { readonly schemas: Record<string, JsonSchema>; readonly securitySchemes?: Record<string, OpenApiObject> };
  readonly tags?: readonly OpenApiObject[];
  readonly [extension: `x-${string}`]: unknown;
}

/** A reference to a schema of the document's `components.schemas`. */
export function ref(name: string): JsonSchema {
  return { $ref: `#/components/schemas/${name}` };
}

/** The JSON body of a request or a response, of `schema`. */
export function jsonContent(schema: JsonSchema, extra: OpenApiObject = {}): OpenApiObject {
  return { 'application/json': { schema, ...extra } };
}
