import { API_GROUPS, httpApiGroup, type ApiGroup, type RestrictedApis } from '../restricted-api';
import type { OpenApiObject } from './json-schema';

/**
 * What a document says of restricted APIs (`httpRestrictedApi`, docs/security.md): one API-key scheme per header
 * the restricted groups need (the header's name, never its value), and on each operation of a restricted group the
 * scheme it needs.
 */
export class DocumentSecurity {
  constructor(private readonly restricted: RestrictedApis) {}

  /** The scheme name of a header. */
  private static schemeOf(header: string): string {
    return `header_${header}`;
  }

  /** `components.securitySchemes`: one per header; undefined when nothing is restricted. */
  schemes(): Record<string, OpenApiObject> | undefined {
    const schemes: Record<string, OpenApiObject> = {};
    for (const group of API_GROUPS) {
      const r = this.restricted.restriction(group);
      if (r === undefined) continue;
      const name = DocumentSecurity.schemeOf(r.header);
      const groups = ((schemes[name]?.['x-api-groups'] as ApiGroup[] | undefined) ?? []).concat(group);
      schemes[name] = { type: 'apiKey', in: 'header', name: r.header, description: `restricted API groups: ${groups.join(', ')} (httpRestrictedApi)`, 'x-api-groups': groups };
    }
    return Object.keys(schemes).length > 0 ? schemes : undefined;
  }

  /** The API group of a path (a template such as `/v2/models/{model_name}/infer` too), when it is restricted. */
  restrictedGroup(path: string): ApiGroup | undefined {
    const group = httpApiGroup(path);
    return group !== undefined && this.restricted.restriction(group) !== undefined ? group : undefined;
  }

  /** The `security` of an operation on `path`: the scheme its group needs; undefined when it needs none. */
  requirement(path: string): OpenApiObject[] | undefined {
    return this.groupRequirement(httpApiGroup(path));
  }

  /** The `security` of an operation of `group`: the scheme it needs; undefined when it needs none. */
  groupRequirement(group: ApiGroup | undefined): OpenApiObject[] | undefined {
    const r = group && this.restricted.restriction(group);
    return r ? [{ [DocumentSecurity.schemeOf(r.header)]: [] }] : undefined;
  }
}
