import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { insertMarker } from '../../shared/profiles/insert-markers.js';

/** The marker as the workers stored it before (a Buffer digest read as a signed 64-bit integer). */
const storedForm = (id: string): string => createHash('sha1').update(id).digest().readBigInt64BE(0).toString();

describe('insert markers', () => {
  it('are the first 8 bytes of SHA-1 as a signed 64-bit decimal, so markers stored by earlier versions still match', () => {
    const ids = ['i:a', 'i:', 'm:msg-1:0', 'i:ünïcødé-🙂', `i:${'x'.repeat(200)}`];
    for (let k = 0; k < 2000; k++) ids.push(`i:${k}-${(k * 2654435761) % 4294967296}`);
    const signs = new Set<boolean>();
    for (const id of ids) {
      const m = insertMarker(id);
      expect(m, id).toBe(storedForm(id));
      signs.add(m.startsWith('-'));
    }
    // both halves of the range occur: the sign bit is read as a sign, not as a magnitude
    expect(signs).toEqual(new Set([true, false]));
    expect(insertMarker('i:a')).toMatch(/^-?\d{1,19}$/);
  });
});
