import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The public types of `triton.http.router`, so that the package's types need nothing beyond Node's: the router is
 * an express `Router`, and these describe the part of it a route uses. A project with `@types/express` may view it
 * as one (`triton.http.router as unknown as express.Router`).
 */

/** A request as a route on `triton.http.router` sees it: Node's request, with what express adds. */
export interface RouteRequest extends IncomingMessage {
  /** Path parameters: `/items/:id` gives `params.id`. */
  readonly params: Record<string, string>;
  /** The query string, parsed. */
  readonly query: Record<string, unknown>;
  /** The path of the URL, without the query string. */
  readonly path: string;
  /** The body, once a body-parsing middleware of your own has read it. */
  body?: unknown;
}

/** A response as a route on `triton.http.router` writes it: Node's response, with express's helpers. */
export interface RouteResponse extends ServerResponse {
  /** Sets the status code. */
  status(code: number): this;
  /** Sends a string, a Buffer or (as JSON) an object, and ends the response. */
  send(body?: unknown): this;
  /** Sends `body` as JSON and ends the response. */
  json(body?: unknown): this;
  /** Sets a response header. */
  set(field: string, value: string | string[]): this;
}

/** A route or middleware; what it throws or rejects with is answered as Triton's `{"error": "..."}`. */
export type RouteHandler = (req: RouteRequest, res: RouteResponse, next: (err?: unknown) => void) => unknown;

/** An error-handling middleware (four parameters), for `use()`. */
export type ErrorRouteHandler = (err: unknown, req: RouteRequest, res: RouteResponse, next: (err?: unknown) => void) => unknown;

/** A path a route matches: express's path patterns (`/items/:id`), a RegExp, or a list of them. */
export type RoutePath = string | RegExp | readonly (string | RegExp)[];

/** The routes of your own served beside the KServe v2 API on the HTTP port (an express `Router`). */
export interface HttpRouter {
  use(...handlers: (RouteHandler | ErrorRouteHandler)[]): this;
  use(path: RoutePath, ...handlers: (RouteHandler | ErrorRouteHandler)[]): this;
  all(path: RoutePath, ...handlers: RouteHandler[]): this;
  get(path: RoutePath, ...handlers: RouteHandler[]): this;
  post(path: RoutePath, ...handlers: RouteHandler[]): this;
  put(path: RoutePath, ...handlers: RouteHandler[]): this;
  patch(path: RoutePath, ...handlers: RouteHandler[]): this;
  delete(path: RoutePath, ...handlers: RouteHandler[]): this;
  head(path: RoutePath, ...handlers: RouteHandler[]): this;
  options(path: RoutePath, ...handlers: RouteHandler[]): this;
}

/** `triton.http`: the HTTP port's router for routes of your own. */
export interface HttpEndpoint {
  readonly router: HttpRouter;
}
