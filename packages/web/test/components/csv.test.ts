import { describe, expect, it } from 'vitest';
import { csvBlob, csvField, csvFileName, csvLine } from '../../src/lib/csv';

describe('CSV export', () => {
  it('quotes a field holding a comma, a quote or a line break, doubling its quotes', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
  });

  it('writes numbers as numbers, lists joined, nothing for null', () => {
    expect(csvField(-7.5)).toBe('-7.5');
    expect(csvField(['10.0.0.1', '10.0.0.2'])).toBe('10.0.0.1; 10.0.0.2');
    expect(csvField(null)).toBe('');
    expect(csvField(undefined)).toBe('');
    expect(csvField(false)).toBe('false');
  });

  it('keeps text a spreadsheet would run as a formula from running (CSV injection)', () => {
    expect(csvField('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvField('+1')).toBe("'+1");
    expect(csvField('-cmd')).toBe("'-cmd");
    expect(csvField('@sum')).toBe("'@sum");
  });

  it('ends every line with CRLF (RFC 4180)', () => {
    expect(csvLine(['a', 1, null])).toBe('a,1,\r\n');
  });

  it('writes the header and every page in order, counting rows as they arrive', async () => {
    async function* pages() {
      yield [{ n: 1 }, { n: 2 }];
      yield [{ n: 3 }];
    }
    const counts: number[] = [];
    const blob = await csvBlob([{ header: 'N', value: (r: { n: number }) => r.n }], pages(), { onRows: (n) => counts.push(n) });
    const bytes = new Uint8Array(await blob.arrayBuffer());
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]); // the byte-order mark
    expect(new TextDecoder().decode(bytes)).toBe('N\r\n1\r\n2\r\n3\r\n');
    expect(counts).toEqual([2, 3]);
  });

  it('stops between pages when cancelled', async () => {
    const controller = new AbortController();
    async function* pages() {
      yield [1];
      controller.abort();
      yield [2];
    }
    await expect(csvBlob([{ header: 'N', value: (r: number) => r }], pages(), { signal: controller.signal })).rejects.toThrow();
  });

  it('names the file after the table and the day', () => {
    expect(csvFileName('Audit trail, the newest first', new Date('2026-11-26T10:00:00Z'))).toBe('audit-trail-the-newest-first-2026-11-26.csv');
  });
});
