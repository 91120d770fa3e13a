import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { TritonError } from '../../base/errors';
import { PAGE_SCRIPT } from './page-script';

/** Where the page's files are served: `/v2/docs/assets/<file>`. */
const ASSETS_PATH = '/v2/docs/assets/';

/**
 * The content security policy of the page and its files: scripts, styles, images and requests from this server
 * only (Swagger UI's icons are `data:` images in its stylesheet), no inline script, no frames, no plugins.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The Swagger UI files the page uses, from swagger-ui-dist: its bundle and stylesheet (and its licence). */
export const SWAGGER_UI_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'LICENSE'] as const;

/** One file of the page, as it is served. */
export interface PageAsset {
  readonly contentType: string;
  readonly body: Buffer;
  /** The body gzip-compressed, for clients that accept it. */
  readonly gzip: Buffer;
}

/** The page of a document at `documentUrl`, titled `title`. */
export function docsPage(title: string, documentUrl: string): string {
  const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS_PATH}swagger-ui.css">
</head>
<body>
<div id="docs" data-document="${escape(documentUrl)}"></div>
<script src="${ASSETS_PATH}swagger-ui-bundle.js"></script>
<script src="${ASSETS_PATH}docs-page.js"></script>
</body>
</html>
`;
}

/**
 * The page's files, read once: Swagger UI's from the copy the build puts beside this module
 * (`dist/lib/server/openapi/swagger-ui/`, scripts/copy-assets.js), else from the installed swagger-ui-dist package;
 * the page's own script from `PAGE_SCRIPT`.
 */
export class PageAssets {
  private files: Map<string, PageAsset> | undefined;

  /** The file `name`, or undefined when the page has no such file. */
  get(name: string): PageAsset | undefined {
    this.files ??= loadAssets();
    return this.files.get(name);
  }
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '': 'text/plain; charset=utf-8',
};

function loadAssets(): Map<string, PageAsset> {
  const dir = swaggerUiDir();
  const files = new Map<string, PageAsset>();
  const add = (name: string, body: Buffer): void => {
    files.set(name, { contentType: CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream', body, gzip: zlib.gzipSync(body) });
  };
  for (const name of SWAGGER_UI_FILES) add(name, fs.readFileSync(path.join(dir, name)));
  add('docs-page.js', Buffer.from(PAGE_SCRIPT, 'utf8'));
  return files;
}

/**
 * The folder of Swagger UI's files.
 *
 * @throws TritonError `INTERNAL` when neither the build's copy nor the swagger-ui-dist package is there.
 */
function swaggerUiDir(): string {
  const copied = path.join(__dirname, 'swagger-ui');
  if (fs.existsSync(path.join(copied, SWAGGER_UI_FILES[0]))) return copied;
  try {
    return path.dirname(require.resolve('swagger-ui-dist/package.json'));
  } catch {
    throw new TritonError('INTERNAL', `the API reference page's files are missing: neither ${copied} nor the swagger-ui-dist package is there`);
  }
}
