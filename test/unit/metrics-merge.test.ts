import { describe, expect, it } from 'vitest';
import { createMetrics, mergeSnapshots } from '../../shared/platform/metrics.js';

describe('mergeSnapshots (one exposition from several threads of a process)', () => {
  it('sums a counter both threads have, keeps per-thread series apart, one TYPE line per family', async () => {
    const main = createMetrics({ now: Date.now });
    const thread = createMetrics({ now: Date.now });
    main.countIngest('eventsWritten', 2);
    thread.countIngest('eventsWritten', 5);
    thread.observeInsert('events', 100, 0.02, false);
    thread.observeInsert('events', 100, 0.5, true);
    main.observeRequest('/v1/GetTreatments', 200, 0.003);
    main.collectDefaults('main');
    thread.collectDefaults('workers');

    const text = await mergeSnapshots([await main.snapshot(), await thread.snapshot({ threadOnly: true })]).metrics();
    expect(text).toMatch(/^tds_ingest_events_written_total 7$/m);
    expect(text).toMatch(/^tds_clickhouse_insert_rows_total\{table="events"\} 100$/m);
    expect(text).toMatch(/^tds_clickhouse_insert_errors_total\{table="events"\} 1$/m);
    expect(text).toMatch(/^tds_clickhouse_insert_duration_seconds_count\{table="events"\} 2$/m);
    expect(text).toMatch(/^tds_http_requests_total\{operation="\/v1\/GetTreatments",status="200"\} 1$/m);
    expect(text).toMatch(/^tds_nodejs_heap_size_used_bytes\{thread="main"\} \d+/m);
    expect(text).toMatch(/^tds_nodejs_heap_size_used_bytes\{thread="workers"\} \d+/m);
    expect(text.match(/^tds_process_resident_memory_bytes/gm)).toHaveLength(1);
    const types = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    expect(new Set(types).size).toBe(types.length);
  });

  it('counts cache and delivery tallies kept as plain numbers, read at scrape time', async () => {
    const m = createMetrics({ now: Date.now });
    const stats = { hits: 0, misses: 0 };
    m.watchCache('catalog', stats);
    stats.hits += 9;
    stats.misses += 1;
    m.delivery.withTreatments += 3;
    m.delivery.treatmentsReturned += 5;
    m.delivery.empty += 2;
    const text = await m.render();
    expect(text).toMatch(/^tds_cache_requests_total\{cache="catalog",result="hit"\} 9$/m);
    expect(text).toMatch(/^tds_cache_requests_total\{cache="catalog",result="miss"\} 1$/m);
    expect(text).toMatch(/^tds_delivery_responses_total\{outcome="treatments"\} 3$/m);
    expect(text).toMatch(/^tds_delivery_responses_total\{outcome="empty"\} 2$/m);
    expect(text).toMatch(/^tds_delivery_treatments_returned_total 5$/m);
  });
});
