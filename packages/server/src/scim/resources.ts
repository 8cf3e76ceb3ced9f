import { isUuid } from '@surveyor/contract';
import { ScimError } from './errors.js';
import type { GroupRow, UserRow } from './scim.repo.js';
import { type Attr, URN, enterpriseAttrs, findAttr, groupAttrs, userAttrs } from './schema.js';

// Between the wire and the rows: what a provider sends is normalised against the schema (names
// to their canonical case, Entra's "True"/"False" to booleans, a manager given as a bare id to
// { value }, read-only attributes dropped, unknown ones ignored), and rows become resources.

const MAX_STRING = 1024;
const MAX_VALUES = 50;
const MAX_RESOURCE_BYTES = 32 * 1024;

const bad = (detail: string): never => {
  throw new ScimError(400, detail, 'invalidValue');
};

function coerce(def: Attr, value: unknown, path: string): unknown {
  if (value === null) return undefined;
  if (def.multiValued) {
    const list = Array.isArray(value) ? value : [value];
    if (list.length > MAX_VALUES) bad(`${path}: at most ${MAX_VALUES} values.`);
    const out = list.map((v, i) => coerce({ ...def, multiValued: false }, v, `${path}[${i}]`)).filter((v) => v !== undefined);
    return out.length ? out : undefined;
  }
  switch (def.type) {
    case 'boolean':
      if (typeof value === 'boolean') return value;
      // Microsoft Entra ID sends booleans as the strings "True" and "False" (its documented quirk).
      if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
      return bad(`${path}: expected a boolean.`);
    case 'complex': {
      // Entra's manager is a bare id: { value: id }.
      if (typeof value === 'string' && def.subAttributes && findAttr(def.subAttributes, 'value')) return { value: coerce(findAttr(def.subAttributes, 'value')!, value, `${path}.value`) };
      if (typeof value !== 'object' || Array.isArray(value)) return bad(`${path}: expected an object.`);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const sub = findAttr(def.subAttributes ?? [], k);
        if (!sub || sub.mutability === 'readOnly') continue;
        const c = coerce(sub, v, `${path}.${sub.name}`);
        if (c !== undefined) out[sub.name] = c;
      }
      return Object.keys(out).length ? out : undefined;
    }
    case 'integer':
      if (typeof value === 'number' && Number.isInteger(value)) return value;
      return bad(`${path}: expected an integer.`);
    default:
      if (typeof value === 'number') value = String(value);
      if (typeof value !== 'string') return bad(`${path}: expected a string.`);
      if (value.length > MAX_STRING) return bad(`${path}: longer than ${MAX_STRING} characters.`);
      return value;
  }
}

/** Normalises the writable attributes of `input` against `attrs`; URN-keyed extension objects and `urn:…:attr` keys too. */
function normalise(input: Record<string, unknown>, attrs: Attr[], withEnterprise: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const ext: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    const lower = k.toLowerCase();
    if (withEnterprise && lower === URN.enterprise.toLowerCase()) {
      if (v && typeof v === 'object' && !Array.isArray(v)) Object.assign(ext, v);
      continue;
    }
    if (withEnterprise && lower.startsWith(`${URN.enterprise.toLowerCase()}:`)) {
      ext[k.slice(URN.enterprise.length + 1)] = v;
      continue;
    }
    const name = lower.startsWith(`${URN.user.toLowerCase()}:`) || lower.startsWith(`${URN.group.toLowerCase()}:`) ? k.slice(k.lastIndexOf(':') + 1) : k;
    const def = findAttr(attrs, name);
    if (!def || def.mutability === 'readOnly') continue;
    const c = coerce(def, v, def.name);
    if (c !== undefined) out[def.name] = c;
  }
  if (withEnterprise) {
    const e = coerce({ name: URN.enterprise, type: 'complex', description: '', subAttributes: enterpriseAttrs }, ext, 'enterprise');
    if (e !== undefined) out[URN.enterprise] = e;
  }
  return out;
}

function objectBody(body: unknown, schema: string): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ScimError(400, 'The body must be a JSON object.', 'invalidSyntax');
  const b = body as Record<string, unknown>;
  const schemas = b.schemas;
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === schema.toLowerCase())) {
    throw new ScimError(400, `schemas must list ${schema}.`, 'invalidSyntax');
  }
  return b;
}

export interface UserInput {
  userName: string;
  externalId: string | null;
  active: boolean | undefined;
  password: string | undefined;
  /** Everything else writable, canonical names, as stored. */
  resource: Record<string, unknown>;
}

/** A User body (POST, PUT, or the result of a PATCH) as stored; throws ScimError 400 for what cannot be. */
export function userInput(body: unknown): UserInput {
  const all = normalise(objectBody(body, URN.user), [...userAttrs, { name: 'externalId', type: 'string', description: '', caseExact: true }], true);
  const { userName, externalId, active, password, ...resource } = all;
  if (typeof userName !== 'string' || userName.trim() === '') bad('userName is required.');
  if ((userName as string).length > 320) bad('userName: at most 320 characters.');
  if (typeof externalId === 'string' && externalId.length > 512) bad('externalId: at most 512 characters.');
  if (JSON.stringify(resource).length > MAX_RESOURCE_BYTES) bad(`The user is larger than ${MAX_RESOURCE_BYTES} bytes.`);
  return { userName: (userName as string).trim(), externalId: (externalId as string | undefined) ?? null, active: active as boolean | undefined, password: password as string | undefined, resource };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The sign-in email of a person: the primary email, else a work one, else the first, else userName; only one that is an address. */
export function loginEmail(u: UserInput): string | undefined {
  const emails = (u.resource.emails as { value?: string; type?: string; primary?: boolean }[] | undefined) ?? [];
  const ordered = [...emails.filter((e) => e.primary), ...emails.filter((e) => e.type === 'work'), ...emails, { value: u.userName }];
  const hit = ordered.map((e) => e.value?.trim().toLowerCase()).find((v) => v !== undefined && v.length <= 320 && EMAIL.test(v));
  return hit;
}

export interface GroupInput {
  displayName: string;
  externalId: string | null;
  members: string[];
}

/** A Group body as stored: its members' ids, each a uuid (checked against the organisation by the service). */
export function groupInput(body: unknown): GroupInput {
  const all = normalise(objectBody(body, URN.group), [...groupAttrs.map((a) => (a.name === 'members' ? { ...a, subAttributes: a.subAttributes!.map((s) => ({ ...s, mutability: 'readWrite' as const })) } : a)), { name: 'externalId', type: 'string', description: '', caseExact: true }], false);
  const displayName = all.displayName;
  if (typeof displayName !== 'string' || displayName.trim() === '') bad('displayName is required.');
  if ((displayName as string).length > 256) bad('displayName: at most 256 characters.');
  const raw = Object.entries(body as Record<string, unknown>).find(([k]) => k.toLowerCase() === 'members')?.[1];
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) bad('members: expected an array.');
  const members: string[] = [];
  for (const [i, m] of ((raw as unknown[] | undefined) ?? []).entries()) {
    const value = m && typeof m === 'object' ? Object.entries(m).find(([k]) => k.toLowerCase() === 'value')?.[1] : undefined;
    if (typeof value !== 'string' || !isUuid(value)) bad(`members[${i}].value: not the id of a User of this service.`);
    members.push((value as string).toLowerCase());
  }
  return { displayName: (displayName as string).trim(), externalId: (all.externalId as string | undefined) ?? null, members: [...new Set(members)] };
}

export const etagOf = (version: number | string) => `W/"${version}"`;

/**
 * Checks `If-Match` (RFC 7644 3.14): absent or `*` passes; otherwise one of the listed tags must
 * be the resource's (weak comparison). Throws 412 otherwise.
 */
export function checkIfMatch(header: string | string[] | undefined, etag: string): void {
  if (header === undefined) return;
  const tags = [header].flat().join(',').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (tags.includes('*') || tags.includes(etag.replace(/^W\//, ''))) return;
  throw new ScimError(412, `The resource changed: its version is ${etag}, not ${[header].flat().join(', ')}. Read it again.`);
}

function userVersion(r: UserRow): string {
  return r.version !== null ? String(r.version) : `m${r.member_updated.getTime()}`;
}

export function userEtag(r: UserRow): string {
  return etagOf(userVersion(r));
}

/** A member as a SCIM User. A member the provider never touched is shown from their email. */
export function userResource(r: UserRow, groups: { id: string; display_name: string }[], base: string): Record<string, unknown> {
  const stored = r.resource ?? { emails: [{ value: r.email, type: 'work', primary: true }] };
  const { [URN.enterprise]: enterprise, ...core } = stored;
  return {
    schemas: enterprise ? [URN.user, URN.enterprise] : [URN.user],
    id: r.user_id,
    ...(r.external_id ? { externalId: r.external_id } : {}),
    userName: r.user_name ?? r.email,
    ...core,
    active: r.deactivated_at === null,
    groups: groups.map((g) => ({ value: g.id, $ref: `${base}/Groups/${g.id}`, display: g.display_name, type: 'direct' })),
    ...(enterprise ? { [URN.enterprise]: enterprise } : {}),
    meta: {
      resourceType: 'User',
      created: (r.created_at ?? r.member_since).toISOString(),
      lastModified: (r.updated_at ?? r.member_updated).toISOString(),
      location: `${base}/Users/${r.user_id}`,
      version: userEtag(r),
    },
  };
}

export function groupResource(g: GroupRow, members: { user_id: string; email: string; resource: Record<string, unknown> | null }[] | undefined, base: string): Record<string, unknown> {
  return {
    schemas: [URN.group],
    id: g.id,
    ...(g.external_id ? { externalId: g.external_id } : {}),
    displayName: g.display_name,
    ...(members ? { members: members.map((m) => ({ value: m.user_id, $ref: `${base}/Users/${m.user_id}`, display: (m.resource?.displayName as string | undefined) ?? m.email, type: 'User' })) } : {}),
    meta: { resourceType: 'Group', created: g.created_at.toISOString(), lastModified: g.updated_at.toISOString(), location: `${base}/Groups/${g.id}`, version: etagOf(g.version) },
  };
}
