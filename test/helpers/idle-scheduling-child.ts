/**
 * A process that puts itself in the idle CPU class (shared/platform/idle-scheduling.ts) with short
 * limits, for test/integration/idle-scheduling.test.ts: it prints `ready`, and on every line read
 * from stdin it blocks its own event loop for that many milliseconds (a starvation, as far as its
 * timer can tell), then prints the class it is in whenever that changes.
 */
import { createInterface } from 'node:readline';
import pino from 'pino';
import { startIdleScheduling } from '../../shared/platform/idle-scheduling.js';

// IDLE_CHILD_LOG=1: its log on stderr (JSON lines), for a test that reads what it says
const log = process.env.IDLE_CHILD_LOG === '1' ? pino({ level: 'info' }, pino.destination(2)) : pino({ level: 'silent' });
const sched = startIdleScheduling(log, { checkMs: 50, starvedAfterMs: 200, holdMs: 1500 });
if (!sched) {
  process.stdout.write('unavailable\n');
  process.exit(1);
}
let shown = sched.current();
setInterval(() => {
  if (sched.current() !== shown) process.stdout.write(`${(shown = sched.current())}\n`);
}, 20);
createInterface({ input: process.stdin }).on('line', (line) => {
  const until = Date.now() + Number(line);
  while (Date.now() < until) {
    // busy: the timer cannot run
  }
});
process.stdout.write('ready\n');
