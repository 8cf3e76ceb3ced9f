// NetFlow v9 and IPFIX export packets built byte by byte, for the decoder and the collector.

/** sourceIPv4Address, destinationIPv4Address, sourceTransportPort, destinationTransportPort, protocolIdentifier, packetDeltaCount, octetDeltaCount. */
export const FIELDS: [number, number][] = [[8, 4], [12, 4], [7, 2], [11, 2], [4, 1], [2, 4], [1, 4]];

export const u16 = (n: number) => Buffer.from([n >> 8, n & 255]);
export const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
/** A set (v9: flowset) of `id` around `body`. */
export const set = (id: number, body: Buffer) => Buffer.concat([u16(id), u16(body.length + 4), body]);
export const template = (id: number, fields: [number, number][]) => Buffer.concat([u16(id), u16(fields.length), ...fields.map(([t, l]) => Buffer.concat([u16(t), u16(l)]))]);
/** A data record of the FIELDS template: TCP from port 51000, 3 packets, 300 bytes. */
export const record = (src: string, dst: string, dstPort: number) =>
  Buffer.concat([Buffer.from(src.split('.').map(Number)), Buffer.from(dst.split('.').map(Number)), u16(51000), u16(dstPort), Buffer.from([6]), u32(3), u32(300)]);
export const ipfix = (exportSeconds: number, domain: number, ...sets: Buffer[]) => {
  const body = Buffer.concat(sets);
  return Buffer.concat([u16(10), u16(16 + body.length), u32(exportSeconds), u32(1), u32(domain), body]);
};
export const v9 = (exportSeconds: number, domain: number, ...sets: Buffer[]) => Buffer.concat([u16(9), u16(sets.length), u32(1000), u32(exportSeconds), u32(1), u32(domain), ...sets]);
