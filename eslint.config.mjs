// ESLint flat config: typescript-eslint's type-aware recommended rules for the client and tests.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'bundled/**', 'node_modules/**', '.e2e-cache/**', 'tests/e2e/out/**', '.venv/**', 'server/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: ['error', 'always'],
      curly: 'error',
    },
  },
  {
    // extension/lib/ is the client's logic without VS Code: unit-tested under plain node, so it
    // never imports `vscode` or the language client (ARCHITECTURE.md, invariants).
    files: ['extension/lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'extension/lib/ must run without VS Code: pass what you need in.' }],
          patterns: [{ group: ['vscode-languageclient', 'vscode-languageclient/*'], message: 'extension/lib/ must run without VS Code.' }],
        },
      ],
    },
  },
  {
    // node:test's describe/it return promises the runner awaits itself.
    files: ['tests/extension/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);
