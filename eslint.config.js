// ESLint: typescript-eslint's recommended rules, plus the dependency direction of DESIGN.md encoded as
// import restrictions. Layers, innermost first:
//   errors, error-body, clock, config, observability, tokenizer, events (leaves: import nothing of the app)
//   ledger, limits, providers, security, plugins, alerts       (stores and adapters)
//   admission, routing                                         (decisions)
//   chat, admin                                                (services)
//   http                                                       (the only code that knows the web framework)
//   main.ts, cli.ts, bootstrap-demo.ts                         (composition root and command line)
// A folder may import its own layer's leaves and anything inward of it, never outward. Only the composition
// root picks concrete implementations (stores, ledgers, provider adapters).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const layer = (folders, message) => ({ regex: `(^|/)(${folders.join('|')})/`, message, allowTypeImports: false });

const outward = {
  leaves: ['ledger', 'limits', 'providers', 'security', 'plugins', 'alerts', 'admission', 'routing', 'chat', 'admin', 'http'],
  stores: ['admission', 'routing', 'chat', 'admin', 'http'],
  decisions: ['chat', 'admin', 'http'],
  services: ['http'],
};

/** Concrete implementations: only main.ts builds them. */
const concrete = {
  regex: '(kysely-[a-z-]+|memory-[a-z-]+-store|memory-change-feed|redis-[a-z-]+|openai-provider|demo-provider|ledger/database|ledger/migrations)(\\.js)?$',
  message: 'only src/main.ts picks concrete implementations; import the interface at the top of the folder',
};

const restrict = (files, folders, extra = []) => ({
  files,
  rules: {
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: extra,
        patterns: [
          ...(folders.length ? [layer(folders, `dependencies point inward (DESIGN.md): this folder may not import ${folders.join(', ')}`)] : []),
          concrete,
        ],
      },
    ],
  },
});

const framework = ['fastify', '@fastify/cors'].map((name) => ({ name, message: 'only src/http/ knows the web framework' }));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'data/', 'web/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-console': 'off',
    },
  },
  restrict(
    ['src/errors.ts', 'src/error-body.ts', 'src/clock.ts', 'src/config/**', 'src/observability/**', 'src/tokenizer/**', 'src/events/**'],
    outward.leaves,
    framework,
  ),
  restrict(['src/{ledger,limits,providers,security,plugins,alerts}/**'], outward.stores, framework),
  restrict(['src/{admission,routing}/**'], outward.decisions, framework),
  restrict(['src/{chat,admin}/**'], outward.services, framework),
  restrict(['src/http/**'], []),
  {
    // An object literal's getter or setter is a new function each time the literal runs, so each object
    // gets a hidden class of its own; hidden classes live in the old generation, and one made a request
    // kept that request's objects through every young-generation collection until the next full one
    // (bench/README.md, ninth session). A class's accessors are on its prototype, made once.
    files: ['src/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
          message: 'no getters or setters in object literals (a hidden class each time the literal runs): use a class',
        },
      ],
    },
  },
  {
    // The dashboard runs in the browser.
    files: ['web/src/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Tests and benchmarks wire what they need.
    files: ['test/**', 'bench/**'],
    // JSON answers are read loosely in tests (a marked seam): the assertions check their shape.
    rules: { '@typescript-eslint/no-non-null-assertion': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
);
