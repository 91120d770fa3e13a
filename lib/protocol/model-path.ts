/** The HTTP path of a model's routes, `/v2/models/{name}[/versions/{version}]`, each segment %-encoded. */
export function modelPath(name: string, version?: string): string {
  return `/v2/models/${encodeURIComponent(name)}${version ? `/versions/${encodeURIComponent(version)}` : ''}`;
}
