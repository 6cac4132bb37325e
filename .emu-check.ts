import { startPubSubEmulator } from './test/helpers/pubsub-emulator.js';
const t0 = Date.now();
try { await startPubSubEmulator(); } catch (e) { console.log('rejected after', Date.now()-t0, 'ms:', (e as Error).message); }
