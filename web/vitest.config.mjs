// The console's unit tests (`make test-web`): test/*.test.js, each in a
// page of its own (happy-dom: document, DOMParser, fetch), against a
// server of the test's own on 127.0.0.1 where a module talks to the REST API.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.js'],
    environment: 'happy-dom',
    environmentOptions: { happyDOM: { url: 'http://127.0.0.1/console/' } },
    testTimeout: 10000,
  },
});
