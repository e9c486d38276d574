// Lint rules of the codebase: typescript-eslint's type-aware recommendations, nothing unused, the
// layering of CONTRIBUTING.md (which folder of src/ may import which) and files of at most 450 lines.
// Import cycles are checked by madge (npm run lint); formatting is prettier's (.prettierrc.json),
// so no stylistic rules here.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

/** An import of one of these folders of src/ (from anywhere below src/). */
const folders = (...names) => `^(\\.\\.?/)+(${names.join('|')})(/|\\.js$)`;

/** The layer rule of a folder: what it must not import, and why (CONTRIBUTING.md, "Layering"). */
function layer(files, patterns, ignores = []) {
  return {
    files,
    ignores,
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns }],
    },
  };
}

const notAbove = (folder, names) => ({
  regex: folders(...names),
  message: `${folder} must not import ${names.join(', ')}: data flows http → services → (domain, repositories) → db (CONTRIBUTING.md, "Layering").`,
});

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'clients/**/dist/', 'clients/**/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/only-throw-error': 'off',
      // Fastify plugins and handlers are async functions by contract, awaiting or not
      '@typescript-eslint/require-await': 'off',
      // it disagrees with tsc under noUncheckedIndexedAccess and removes assertions tsc needs
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
  {
    // tests and benchmarks read untyped rows and response bodies on purpose
    files: ['test/**', 'bench/**', 'chaos/**', 'clients/**/test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // a promise returned from inside try must be awaited there, or the finally (closing the database
    // or the client it uses) runs before it settles. Route handlers return Fastify's reply, which is
    // a thenable by design, so src/http is left out.
    files: ['bench/**/*.ts', 'chaos/**/*.ts', 'clients/**/*.ts', 'src/**/*.ts', 'test/**/*.ts'],
    ignores: ['src/http/**'],
    rules: { '@typescript-eslint/return-await': ['error', 'in-try-catch'] },
  },
  { files: ['src/**/*.ts'], rules: { 'max-lines': ['error', { max: 450 }] } },
  // Layering. The loops' modules (scheduler) and the entry points (app, main, runtime, cli) are
  // above every layer; nothing in a layer imports them.
  layer(
    ['src/domain/**/*.ts'],
    [
      notAbove('src/domain', ['db', 'repositories', 'services', 'http', 'scheduler', 'cli', 'app', 'main', 'runtime', 'config', 'logger']),
      {
        regex: '^(pg|kysely|fastify|pino|prom-client|node:.*)$',
        message: 'src/domain is pure: no I/O, no clock (time is an argument).',
      },
    ],
  ),
  layer(
    ['src/db/**/*.ts'],
    [
      notAbove('src/db', ['repositories', 'services', 'http', 'scheduler', 'cli', 'app', 'main', 'runtime']),
      { regex: folders('domain'), allowTypeImports: true, message: 'src/db may import the types of src/domain only.' },
    ],
  ),
  layer(['src/repositories/**/*.ts'], [notAbove('src/repositories', ['services', 'http', 'scheduler', 'cli', 'app', 'main', 'runtime'])]),
  layer(['src/services/**/*.ts'], [notAbove('src/services', ['http', 'scheduler', 'cli', 'app', 'main', 'runtime'])]),
  layer(['src/scheduler/**/*.ts'], [notAbove('src/scheduler', ['http', 'cli', 'app', 'main', 'runtime'])]),
  layer(
    ['src/http/**/*.ts'],
    [
      notAbove('src/http', ['repositories', 'scheduler', 'cli', 'app', 'main', 'runtime']),
      {
        regex: folders('db'),
        allowTypeImports: true,
        message: 'src/http reaches the database through services; only the types of src/db may be named here.',
      },
    ],
    // justified: the error handler maps driver errors (SQLSTATE) to problem documents, and /readyz
    // probes the database and its schema itself
    ['src/http/error-handler.ts', 'src/http/routes/health.ts'],
  ),
  layer(
    ['src/http/error-handler.ts', 'src/http/routes/health.ts'],
    [notAbove('src/http', ['repositories', 'scheduler', 'cli', 'app', 'main', 'runtime'])],
  ),
  { files: ['**/*.js', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  {
    // the console's browser modules (served from ui/)
    files: ['ui/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'sessionStorage', 'fetch', 'URLSearchParams', 'FormData', 'confirm'].map((g) => [g, 'readonly']),
      ),
    },
  },
  prettier,
);
