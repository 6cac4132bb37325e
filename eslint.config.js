// A small rule set: the recommended checks of ESLint and typescript-eslint (syntax-level, fast,
// no type information), with the few exceptions below, each for a reason.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'client/dist/**', 'data/**', 'console/dist/**', 'test-artifacts/**', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        queueMicrotask: 'readonly',
        structuredClone: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      // A timer handle declared before the closure that clears it, and assigned after, stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // `_`-prefixed names are deliberately unused (destructuring to drop a member, callback arity).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // A type-only import says so, so a reader (and the architecture test's chains of run-time
      // imports) can tell what a module loads from what it only names. `import('…').T` stays
      // allowed: it names the type of a module loaded lazily without loading it.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
    },
  },
  {
    // ClickHouse is reached through the project's Warehouse interface: the vendor client and the
    // SQL stay inside shared/platform/warehouse/, so a table change touches one module.
    files: ['api/**/*.ts', 'workers/**/*.ts', 'shared/**/*.ts'],
    ignores: ['shared/platform/warehouse/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@clickhouse/client', message: 'Use the Warehouse interface (shared/platform/warehouse/warehouse.ts).' },
            { name: 'chdb', message: 'Use the Warehouse interface (shared/platform/warehouse/warehouse.ts).' },
          ],
          patterns: [{ group: ['**/platform/warehouse/sql/*'], message: 'SQL is reached through the Warehouse interface, not its statement modules.' }],
        },
      ],
    },
  },
  {
    // The web console runs in the browser and reads the API's untyped JSON answers.
    files: ['api/console/**/*.{ts,tsx}'],
    languageOptions: {
      parserOptions: { ecmaFeatures: { jsx: true } },
      globals: {
        window: 'readonly',
        document: 'readonly',
        localStorage: 'readonly',
        sessionStorage: 'readonly',
        navigator: 'readonly',
        fetch: 'readonly',
        Response: 'readonly',
        HTMLElement: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests read untyped JSON bodies of HTTP answers.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
