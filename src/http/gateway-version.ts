import { readFileSync } from 'node:fs';

/** The gateway's version, from package.json (two folders up from src/http/ and from dist/http/). */
export function gatewayVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}
