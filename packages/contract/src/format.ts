// How the service writes what people read in more than one place: the console's tables and the
// server's SVG drawings say a byte count the same way.

const IEC = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * A byte count in binary (IEC) units, the one unit of every screen and drawing: "512 B",
 * "3.4 KiB", "1.2 MiB", "7.0 GiB"; "—" for null.
 */
export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  if (Math.abs(n) < 1024) return `${n} B`;
  let v = n / 1024;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < IEC.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${IEC[i]}`;
}

/**
 * A service's product as people say it: "OpenSSH 9.2p1", not "openbsd OpenSSH 9.2p1". The vendor
 * is not put in front (it is in the CPE and the service's own field); a product whose reported
 * name holds it stays as reported ("Apache httpd 2.4.49": "httpd" alone says less). The version
 * follows the product unless the product already ends with it. Null when neither is known.
 */
export function productLabel(s: { product?: string | null | undefined; version?: string | null | undefined; vendor?: string | null | undefined }): string | null {
  const product = s.product?.trim() || null;
  const version = s.version?.trim() || null;
  if (!product) return version;
  if (!version || product.endsWith(version)) return product;
  return `${product} ${version}`;
}
