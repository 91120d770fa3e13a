import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import type { OpenApiDocument } from '../../lib/server/openapi/json-schema';

/** Validates `document` as OpenAPI 3.1 (swagger-parser: the 3.1 schema, and every $ref resolves); throws what is wrong. */
export async function validateOpenApi(document: unknown): Promise<void> {
  // swagger-parser dereferences what it is given in place.
  await SwaggerParser.validate(structuredClone(document) as never);
}

/** A JSON-schema validator of one schema of `document`'s components (JSON Schema 2020-12, OpenAPI 3.1's dialect). */
export function componentValidator(document: OpenApiDocument, name: string): ValidateFunction {
  return schemaValidator(document, { $ref: `#/components/schemas/${name}` });
}

/** A JSON-schema validator of `schema`, a schema of `document` whose references point into its components. */
export function schemaValidator(document: OpenApiDocument, schema: object): ValidateFunction {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  return ajv.compile({ ...schema, components: document.components });
}
