import { describe, expect, it } from 'vitest';
import { AGGREGATION_CALLS } from '../../shared/aggregation/index.js';
import { IMPACT_CALLS } from '../../shared/impact/index.js';
import { INGESTION_CALLS } from '../../shared/ingestion/index.js';
import type { RpcCall } from '../../shared/platform/rpc-call.js';
import { RpcHandlers } from '../../shared/platform/warehouse/warehouse-rpc.js';
import { warehouseCalls } from '../../workers/warehouse/warehouse-ops.js';

const ECHO: RpcCall<[text: string, times: number], string> = { name: 'echo', answerTimeoutMs: 1000 };

describe('the rpc channel of named calls', () => {
  it('calls the registered function in process, with the arguments as given', async () => {
    const handlers = new RpcHandlers().register(ECHO, async (text, times) => text.repeat(times));
    await expect(handlers.call(ECHO, 'ab', 2)).resolves.toBe('abab');
    await expect(handlers.handler('echo')!('x', 3)).resolves.toBe('xxx');
  });

  it('knows only the names registered (an unknown name, even an Object property, has no handler); a name is registered once', async () => {
    const handlers = new RpcHandlers().register(ECHO, async (text) => text);
    for (const name of ['nope', '__proto__', 'constructor', 'toString']) expect(handlers.handler(name)).toBeUndefined();
    await expect(handlers.call({ name: 'nope', answerTimeoutMs: 1 }, 'x')).rejects.toThrow(/no rpc handler registered for nope/);
    expect(() => handlers.register(ECHO, async (text) => text)).toThrow(/registered twice/);
  });

  it('the workers role registers every call a feature declares, under its own name', () => {
    const declared = [...Object.values(IMPACT_CALLS), ...Object.values(INGESTION_CALLS), ...Object.values(AGGREGATION_CALLS)];
    expect(declared.map((c) => c.name).sort()).toEqual(['listDeadLetters', 'listDecisions', 'runAggregations', 'treatmentReport']);
    // registration only keeps the dependencies: nothing is called
    const handlers = warehouseCalls({} as Parameters<typeof warehouseCalls>[0]);
    for (const call of declared) expect(handlers.handler(call.name), call.name).toBeTypeOf('function');
  });
});
