/**
 * What one ioredis `pipeline()` costs on a connection that carries BullMQ's scripts: ioredis's
 * Pipeline constructor copies every defined command (and its Buffer variant) onto each new
 * pipeline, and BullMQ defines its scripts on its queue connection. BullMQ's `addBulk` builds one
 * pipeline per call: the API's LogEvents batcher and decision log pay it once per flush. µs per
 * `pipeline()` with 0 and with BullMQ's number of scripts (no Redis needed: nothing is sent).
 *   npx tsx bench/micro/pipeline-cost.ts [pipelines]
 */
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';

const n = Number(process.argv[2] ?? 20_000);
const bullmqScripts = readdirSync(join(dirname(createRequire(import.meta.url).resolve('bullmq')), 'scripts')).filter((f) => /^\w+-\d+\.js$/.test(f)).length;

for (const scripts of [0, bullmqScripts]) {
  const client = new Redis({ lazyConnect: true });
  for (let i = 0; i < scripts; i++) client.defineCommand(`script${i}`, { numberOfKeys: 1, lua: `return ${i}` });
  for (let round = 0; round < 3; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) client.pipeline();
    const us = Number(process.hrtime.bigint() - started) / 1000 / n;
    console.log(`${String(scripts).padStart(3)} scripts defined: ${us.toFixed(2)} µs a pipeline() (round ${round + 1})`);
  }
  client.disconnect();
}
