import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

/** The CLI tests run the built `dist/cli.js`, as a user would: build it once before the suite. */
export default function setup(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
}
