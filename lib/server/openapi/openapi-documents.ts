import { RestrictedApis } from '../restricted-api';
import type { ServerCore } from '../server-core';
import type { OpenApiDocument } from './json-schema';
import { modelDocument } from './model-document';
import { DocumentSecurity } from './security';
import { serverDocument } from './server-document';

/** What the documents are made from: the server's settings, its models as the transports find them, its metadata. */
export type DocumentedServer = Pick<ServerCore, 'config' | 'repository' | 'metadata'>;

/**
 * The OpenAPI documents of a server, made on each call from the models as they are then (the core's, or a front-end
 * thread's published copy), so that a load, an unload or a new version shows at once.
 */
export class OpenApiDocuments {
  private readonly security: DocumentSecurity;

  constructor(private readonly server: DocumentedServer) {
    this.security = new DocumentSecurity(RestrictedApis.parse(server.config.httpRestrictedApi, 'httpRestrictedApi'));
  }

  /** The server's document; it lists the models unless their metadata is restricted. */
  serverDocument(): OpenApiDocument {
    const { config, repository } = this.server;
    const listed = this.security.restrictedGroup('/v2/models/{model_name}') === undefined;
    return serverDocument(
      { metadata: this.server.metadata(), models: listed ? repository.all() : [], openai: config.openai ? { bearer: (config.openaiApiKey ?? '') !== '' } : undefined },
      this.security,
    );
  }

  /**
   * The document of the latest version of a model, ready or not (a model unloaded is still described, marked not
   * ready).
   *
   * @throws TritonError `MODEL_NOT_FOUND` for a model the server does not have.
   */
  modelDocument(name: string): OpenApiDocument {
    return modelDocument(this.server.repository.find(name), this.security);
  }
}
