import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/** Item 11 of the money-and-shutdown issue: the codebase's guardrails are enforced, not just written down. */
describe('guardrails for the codebase', () => {
  const eslint = new ESLint();
  const lint = async (filePath: string, code: string) => (await eslint.lintText(code, { filePath }))[0]?.messages ?? [];

  it('ESLint refuses an import that points outward (a store importing the HTTP layer)', async () => {
    const messages = await lint('src/ledger/example.ts', "import { buildApp } from '../http/app.js';\nexport const x = buildApp;\n");
    expect(messages.map((m) => m.ruleId)).toContain('@typescript-eslint/no-restricted-imports');
  });

  it('ESLint refuses a concrete implementation imported anywhere but main.ts', async () => {
    const bad = await lint('src/chat/example.ts', "import { KyselyLedger } from '../ledger/kysely-ledger.js';\nexport const x = KyselyLedger;\n");
    expect(bad.map((m) => m.ruleId)).toContain('@typescript-eslint/no-restricted-imports');
    const fine = await lint('src/main-example.ts', "import type { Ledger } from './ledger/ledger.js';\nexport type X = Ledger;\n");
    expect(fine.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')).toEqual([]);
  });

  it('ESLint refuses the web framework outside src/http', async () => {
    const messages = await lint('src/chat/example.ts', "import Fastify from 'fastify';\nexport const x = Fastify;\n");
    expect(messages.map((m) => m.ruleId)).toContain('@typescript-eslint/no-restricted-imports');
  });

  it('every runtime dependency is used by the code it ships', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> };
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((f) => {
        const p = join(dir, f);
        return statSync(p).isDirectory() ? files(p) : /\.(ts|mjs|js)$/.test(f) ? [p] : [];
      });
    const source = ['src', 'bench']
      .flatMap(files)
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const unused = Object.keys(pkg.dependencies).filter((dep) => !source.includes(`'${dep}'`) && !source.includes(`'${dep}/`));
    expect(unused).toEqual([]);
  });

  it('npm run check runs lint, the format check, the types and the tests', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.check).toBe('npm run lint && npm run format:check && npm run typecheck && npm test');
    expect(readFileSync('.ci/run', 'utf8')).toMatch(/npm run lint[\s\S]*npm run format:check[\s\S]*npm run typecheck[\s\S]*npm test/);
  });
});
