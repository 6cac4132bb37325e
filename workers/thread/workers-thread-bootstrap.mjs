// Worker threads do not inherit the parent's TypeScript loader (tsx under `npm start`, vite under
// vitest): register tsx in this thread, then load the TypeScript entry.
import { register } from 'tsx/esm/api';

register();
await import('./workers-thread.ts');
