import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// `npm start` (the web process) in one terminal and `npx vite` here in another: the dev server
// proxies the API to it, so the session cookie stays same-origin. SURVEYOR_API_URL points the proxy
// at another port (for example a throwaway server on 8099).
const target = process.env.SURVEYOR_API_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  base: '/',
  plugins: [react()],
  server: {
    proxy: {
      '/api': { target, changeOrigin: false },
      '/openapi.json': { target },
    },
  },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    sourcemap: false,
    // Screens load on first visit (src/app/router.tsx); the entry (React, router, react-query, zod and
    // the contract) is ~170 KB gzipped, under the 250 KB budget test/components/bundle.test.ts keeps.
    chunkSizeWarningLimit: 700,
  },
});
