// The linter of the project's JavaScript (`make lint-web`): eslint's
// recommended rules over
// - the console (web/console) and the demo map page's script (web/src),
//   ES modules bundled by esbuild for browsers,
// - the build and test files (node ES modules: web/*.mjs, web/test (in a
//   page too), the
//   edge functions' node runners functions/edge/*.mjs),
// - the CDN edge functions (../functions/edge/*.js): CloudFront Functions
//   (cloudfront-js-2.0, njs) run ES 5.1 with a few later features, of
//   which these files use async/await and ES modules' import (tilepath.js
//   and ows.js only). They are parsed as ES2017, so that a later syntax (?., ??,
//   spread in objects, classes' fields) fails here rather than at the
//   edge, and no rule there asks for const, let or arrows. tiletoken.js
//   and edgecases.js are scripts: tiletoken.js is held verbatim in
//   tilepath.js (whose import gives it crypto), and edgecases.js is the tests' driver, composed with an
//   edge file into one script (it calls that file's handler and token
//   functions). Their top-level functions are called from elsewhere, so
//   only local variables must be used; tilepath.js's handler is the
//   runtime's entry point.
import js from '@eslint/js';
import globals from 'globals';
import { fileURLToPath } from 'node:url';

const unused = ['error', { args: 'after-used', caughtErrors: 'none' }];

// Every pattern is of the repository's root (basePath), so that the edge
// functions beside web/ are linted with the rest.
const root = fileURLToPath(new URL('..', import.meta.url));

export default [
  { basePath: root, ignores: ['web/node_modules/'] },
  { basePath: root, ...js.configs.recommended },
  {
    basePath: root,
    files: ['web/console/**/*.js', 'web/src/**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.browser } },
    rules: { 'no-unused-vars': unused },
  },
  {
    basePath: root,
    files: ['web/*.mjs', 'web/test/**/*.js', 'functions/edge/*.mjs'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node } },
    rules: { 'no-unused-vars': unused },
  },
  {
    // The unit tests run in a page (happy-dom) as well as node.
    basePath: root,
    files: ['web/test/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    basePath: root,
    files: ['functions/edge/*.js'],
    languageOptions: {
      ecmaVersion: 2017,
      sourceType: 'script',
      globals: { console: 'readonly', Buffer: 'readonly', globalThis: 'readonly' },
    },
    rules: { 'no-unused-vars': ['error', { vars: 'local', args: 'after-used', caughtErrors: 'none' }] },
  },
  {
    basePath: root,
    files: ['functions/edge/tilepath.js', 'functions/edge/ows.js'],
    languageOptions: { sourceType: 'module' },
    rules: { 'no-unused-vars': ['error', { varsIgnorePattern: '^handler$', args: 'after-used', caughtErrors: 'none' }] },
  },
  {
    basePath: root,
    files: ['functions/edge/tiletoken.js'],
    languageOptions: { globals: { crypto: 'readonly' } },
  },
  {
    basePath: root,
    files: ['functions/edge/edgecases.js'],
    languageOptions: { globals: { handler: 'readonly', tileTokenParse: 'readonly', tileTokenCheck: 'readonly' } },
  },
];
