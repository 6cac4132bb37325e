import { describe, expect, it } from 'vitest';
import { childSpecs, HEAP_FLAGS, heapFlags } from '../../api/supervisor.js';
import { loadConfig } from '../../shared/platform/config.js';

/**
 * `npm start` honours `ROLE`: the API processes only for `api` (no background process, so no
 * second embedded ClickHouse beside a `ROLE=workers` process), the background process only for
 * `workers`/`scheduler`, everything for `all` or no `ROLE`. The ops ports stay where they are
 * whatever the role: the background process on OPS_PORT, API process i on OPS_PORT + i.
 */
const children = (env: Record<string, string>) =>
  childSpecs(loadConfig({ ADMIN_TOKEN: 'a-token-of-32-characters-at-least', ...env })).map((c) => `${c.name} ${c.env.ROLE} ${c.env.OPS_PORT}`);

describe("the supervisor's children by ROLE", () => {
  it('no ROLE or all: the background process (workers and scheduler) and API_PROCESSES API processes', () => {
    expect(children({})).toEqual(['background workers,scheduler 9464', 'api-1 api 9465']);
    expect(children({ ROLE: 'all', API_PROCESSES: '2' })).toEqual(['background workers,scheduler 9464', 'api-1 api 9465', 'api-2 api 9466']);
    expect(children({ ROLE: 'api,workers,scheduler' })).toEqual(children({}));
  });

  it('api: the API processes only', () => {
    expect(children({ ROLE: 'api', API_PROCESSES: '3' })).toEqual(['api-1 api 9465', 'api-2 api 9466', 'api-3 api 9467']);
  });

  it('workers, scheduler or both: the background process only, with those roles', () => {
    expect(children({ ROLE: 'workers' })).toEqual(['background workers 9464']);
    expect(children({ ROLE: 'scheduler' })).toEqual(['background scheduler 9464']);
    expect(children({ ROLE: 'scheduler,workers', API_PROCESSES: '4' })).toEqual(['background workers,scheduler 9464']);
  });

  it('api with one background role: both kinds, the background process with that role alone', () => {
    expect(children({ ROLE: 'api,workers' })).toEqual(['background workers 9464', 'api-1 api 9465']);
  });

  it('OPS_PORT=0: every child picks a free port', () => {
    expect(children({ OPS_PORT: '0' })).toEqual(['background workers,scheduler 0', 'api-1 api 0']);
  });

  it('a ROLE it cannot honour stops the configuration with a message naming the variable', () => {
    expect(() => children({ ROLE: 'apis' })).toThrow(/ROLE/);
  });
});

describe('heap flags of the children', () => {
  it('gives each kind its V8 heap flags, leaving alone any the operator set', () => {
    expect(heapFlags('api', '', [])).toEqual([...HEAP_FLAGS.api]);
    expect(heapFlags('background', '', [])).toEqual([...HEAP_FLAGS.background]);
    expect(heapFlags('api', '--max-semi-space-size=32', [])).toEqual(HEAP_FLAGS.api.filter((f) => !f.startsWith('--max-semi-space-size')));
    expect(heapFlags('background', '', ['--heap-growing-percent=10'])).toEqual([]);
    const specs = childSpecs(loadConfig({ ADMIN_TOKEN: 'a-token-of-32-characters-at-least', API_PROCESSES: '2' }));
    expect(specs.map((s) => s.execArgv.length > 0)).toEqual([true, true, true]);
  });
});
