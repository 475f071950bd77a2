// Builds the dashboard into web/dist: one bundled script and one stylesheet, named by their content's
// hash, and an index.html that loads them (no inline script or style: the page's CSP forbids both).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = dirname(fileURLToPath(import.meta.url));
const out = join(root, 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(root, 'src/main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: join(out, 'assets'),
  entryNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'none',
});

const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
const script = outputs.find((f) => f.endsWith('.js'));
const style = outputs.find((f) => f.endsWith('.css'));
if (!script || !style) throw new Error('the dashboard build made no script or no stylesheet');

writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="no-referrer" />
    <title>Tollgate</title>
    <link rel="icon" href="data:," />
    <link rel="stylesheet" href="/assets/${style}" />
    <script type="module" src="/assets/${script}"></script>
  </head>
  <body>
    <div id="app"><noscript>The Tollgate dashboard needs JavaScript.</noscript></div>
  </body>
</html>
`,
);
console.log(`dashboard built: web/dist (${script}, ${style})`);
