// Lint rules of the codebase: typescript-eslint's type-aware recommendations and nothing unused.
// Import cycles are checked by madge (npm run lint); formatting is prettier's (.prettierrc.json),
// so no stylistic rules here.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

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
