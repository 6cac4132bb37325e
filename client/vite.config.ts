import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The browser build: the client (without the management operations) as one minified ES module,
// client/dist/browser/tds-client.js, for a <script type="module"> or a bundler. Its gzipped size
// is checked by test/client/client-bundle.test.ts.
export default defineConfig({
  logLevel: 'warn',
  build: {
    lib: { entry: fileURLToPath(new URL('src/index.ts', import.meta.url)), formats: ['es'], fileName: () => 'tds-client.js' },
    outDir: fileURLToPath(new URL('dist/browser', import.meta.url)),
    emptyOutDir: true,
    minify: true,
    sourcemap: false,
    reportCompressedSize: false,
    target: 'es2022',
  },
});
