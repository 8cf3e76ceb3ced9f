/**
 * CPE 2.2 URI (what nmap prints, `cpe:/a:openbsd:openssh:9.2p1`) to a CPE 2.3 formatted string
 * (`cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*`), per NISTIR 7695 §6.1.3 (unbind URI) and §6.2.2
 * (bind formatted string): percent-decoding, the packed edition (`~ed~sw_ed~t_sw~t_hw~other`), an
 * empty value as ANY (`*`), `-` as NA, and every character other than letters, digits, `.`, `_`
 * and `-` backslash-quoted. Values are lowercased. A 2.3 string is returned as given (lowercased).
 */
export function toCpe23(uri: string): string | null {
  const s = uri.trim();
  if (/^cpe:2\.3:[aoh*-]:/i.test(s)) return s.toLowerCase();
  const m = /^cpe:\/([aoh]?)(?::(.*))?$/i.exec(s);
  if (!m) return null;
  const rest = (m[2] ?? '').split(':');
  if (rest.length > 6) return null;
  const [vendor = '', product = '', version = '', update = '', edition = '', language = ''] = rest;
  let ed = edition;
  let packed = ['', '', '', ''];
  if (edition.startsWith('~')) {
    const p = edition.split('~');
    if (p.length !== 6) return null;
    ed = p[1]!;
    packed = p.slice(2, 6);
  }
  const values = [m[1] || '', vendor, product, version, update, ed, language, ...packed];
  const bound: string[] = [];
  for (const v of values) {
    const text = decodeUriValue(v);
    if (text === null) return null;
    bound.push(bindValue(text));
  }
  return `cpe:2.3:${bound.join(':')}`;
}

function decodeUriValue(v: string): string | null {
  try {
    return decodeURIComponent(v).toLowerCase();
  } catch {
    return null;
  }
}

function bindValue(text: string): string {
  if (text === '') return '*';
  if (text === '-') return '-';
  return text.replace(/[^a-z0-9._-]/g, (c) => `\\${c}`);
}
