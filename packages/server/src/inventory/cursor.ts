import { type KeyObject, createHash, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

/**
 * Opaque, tamper-evident keyset cursors. The payload names the collection, the filters and the
 * last row's position; the MAC binds it to the organisation too, so an altered cursor, or one
 * from another collection, filter set or organisation, is refused (400 invalid_cursor).
 */
export class CursorCodec {
  /** Imported once: an HMAC of a Buffer key imports it again each time. */
  private readonly key: KeyObject;

  constructor(secretKey: Buffer) {
    this.key = createSecretKey(createHmac('sha256', secretKey).update('surveyor/cursor/v1').digest());
  }

  private mac(organisationId: string, body: string): Buffer {
    return createHmac('sha256', this.key).update(`${organisationId}|${body}`).digest().subarray(0, 16);
  }

  /** Encodes the position after `seq`. */
  encode(organisationId: string, collection: string, filters: Record<string, unknown>, seq: number): string {
    const body = Buffer.from(JSON.stringify({ c: collection, f: filterDigest(filters), s: seq })).toString('base64url');
    return `${body}.${this.mac(organisationId, body).toString('base64url')}`;
  }

  /** The position a cursor names. Throws AppError invalid_cursor for anything not minted here for this exact walk. */
  decode(organisationId: string, collection: string, filters: Record<string, unknown>, cursor: string): number {
    const refuse = (why: string) => new AppError('invalid_cursor', `The cursor is not valid for this collection: ${why}. Start again without a cursor.`);
    const [body, mac] = cursor.split('.');
    if (!body || !mac || cursor.split('.').length !== 2) throw refuse('malformed');
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(organisationId, body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refuse('it was altered or belongs to another organisation');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { c: string; f: string; s: number };
    if (payload.c !== collection) throw refuse(`it belongs to ${payload.c}`);
    if (payload.f !== filterDigest(filters)) throw refuse('the filters changed since it was issued');
    if (!Number.isSafeInteger(payload.s) || payload.s < 0) throw refuse('malformed');
    return payload.s;
  }
}

/** The digests of the filter sets seen lately, by their canonical text: a walk asks for the same one page after page. */
const digests = new Map<string, string>();

function filterDigest(filters: Record<string, unknown>): string {
  const canonical = JSON.stringify(Object.keys(filters).sort().filter((k) => filters[k] !== undefined).map((k) => [k, filters[k]]));
  let digest = digests.get(canonical);
  if (digest === undefined) {
    digest = createHash('sha256').update(canonical).digest('base64url').slice(0, 12);
    // Filter values are input (a host id, a search): the map is bounded, emptied when full.
    if (digests.size >= 1000) digests.clear();
    digests.set(canonical, digest);
  }
  return digest;
}
