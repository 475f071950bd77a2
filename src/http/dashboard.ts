import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Where `npm run build` puts the dashboard (web/dist), from src/http/ or dist/http/ alike. */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/** The page runs only its own files: no inline script or style, nothing fetched from elsewhere. */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

function secure(reply: FastifyReply): FastifyReply {
  return reply.headers({
    'content-security-policy': DASHBOARD_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  });
}

/**
 * The web dashboard (CONTRACT §10) at `/`: the files of web/dist, read once at start and served from
 * memory, each at its own route (no path from the URL ever reaches the file system), with a strict
 * Content-Security-Policy. Without a build, `/` says how to make one.
 */
export function registerDashboard(app: FastifyInstance, dir: string = DEFAULT_DASHBOARD_DIR): void {
  let files: string[];
  try {
    files = filesUnder(dir);
  } catch {
    files = [];
  }
  const index = files.find((f) => relative(dir, f) === 'index.html');
  if (!index) {
    app.get('/', async (_req, reply) =>
      secure(reply)
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The Tollgate dashboard is not built: run `npm run build` (it builds web/dist), then restart the gateway.\n'),
    );
    return;
  }
  for (const file of files) {
    const body = readFileSync(file);
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const path = `/${relative(dir, file).split(sep).join('/')}`;
    // Bundles carry a content hash in their name: they never change. The page itself is checked each time.
    const cache = path.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
    const send = async (_req: unknown, reply: FastifyReply) => secure(reply).type(type).header('cache-control', cache).send(body);
    if (file === index) app.get('/', send);
    else app.get(path, send);
  }
}
