import { type ScimPatchOperation, ScimError as PatchLibraryError, scimPatch } from 'scim-patch';
import { ScimError } from './errors.js';
import { MAX_OPERATIONS, URN, attributesOf, findAttr, splitPath } from './schema.js';

// PATCH (RFC 7644 3.5.2) as Okta and Microsoft Entra ID send it, applied by scim-patch (paths
// with value filters such as members[value eq "…"], add/replace/remove) to the resource as
// the client sees it; the result is then saved like a PUT, so one set of rules checks both.
// What is accepted beyond the RFC's letter (README "SCIM provisioning"):
// - `op` in any case (Entra: "Replace", "Add", "Remove");
// - `replace` with no path and a value object, with read-only attributes in it ignored (Okta sends
//   { "id": …, "displayName": … } to rename a group);
// - attribute names in paths in any case;
// - "True"/"False" strings for booleans (normalised after the patch, resources.ts).

type Resource = Record<string, unknown>;
const READ_ONLY = new Set(['id', 'meta', 'groups', 'schemas']);

interface RawOperation {
  op?: unknown;
  path?: unknown;
  value?: unknown;
}

/** The operations of a PatchOp body; throws ScimError 400 for a malformed one. */
export function patchOperations(body: unknown): RawOperation[] {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ScimError(400, 'The body must be a JSON object.', 'invalidSyntax');
  const b = body as { schemas?: unknown; Operations?: unknown };
  const ops = Object.entries(b).find(([k]) => k.toLowerCase() === 'operations')?.[1];
  if (!Array.isArray(b.schemas) || !b.schemas.some((s) => typeof s === 'string' && s.toLowerCase() === URN.patchOp.toLowerCase())) {
    throw new ScimError(400, `schemas must list ${URN.patchOp}.`, 'invalidSyntax');
  }
  if (!Array.isArray(ops) || ops.length === 0) throw new ScimError(400, 'Operations must list at least one operation.', 'invalidSyntax');
  if (ops.length > MAX_OPERATIONS) throw new ScimError(400, `At most ${MAX_OPERATIONS} operations in one request.`, 'tooMany');
  return ops as RawOperation[];
}

/** The path with its attribute names in the schema's case (the filter inside brackets is left as sent). */
function canonicalPath(path: string, type: 'User' | 'Group'): string {
  const bracket = path.indexOf('[');
  const head = bracket < 0 ? path : path.slice(0, bracket);
  const tail = bracket < 0 ? '' : path.slice(bracket);
  const names = splitPath(head, type);
  if (names.length === 0) throw new ScimError(400, `The path ${JSON.stringify(path)} names no attribute.`, 'invalidPath');
  let attrs = attributesOf(type);
  const canonical = names.map((n) => {
    const def = findAttr(attrs, n);
    if (!def) throw new ScimError(400, `The ${type} resource has no attribute ${JSON.stringify(path)}.`, 'invalidPath');
    attrs = def.subAttributes ?? [];
    return def.name;
  });
  if (READ_ONLY.has(canonical[0]!)) throw new ScimError(400, `${canonical[0]} is read-only${canonical[0] === 'groups' ? ': change group membership through the Group' : ''}.`, 'mutability');
  if (canonical[0] === URN.enterprise) return `${URN.enterprise}${canonical.length > 1 ? `:${canonical.slice(1).join('.')}` : ''}${tail}`;
  // A sub-attribute after a value filter (emails[type eq "work"].value) keeps its place.
  const after = tail.indexOf('].');
  if (after >= 0) return `${canonical[0]}${tail.slice(0, after + 1)}.${findAttr(findAttr(attributesOf(type), canonical[0]!)?.subAttributes ?? [], tail.slice(after + 2))?.name ?? tail.slice(after + 2)}`;
  return canonical.join('.') + tail;
}

/** Applies the operations to a copy of `resource`; the result still needs normalising. Throws ScimError 400 for what cannot apply. */
export function applyPatch(resource: Resource, ops: RawOperation[], type: 'User' | 'Group'): Resource {
  const operations: ScimPatchOperation[] = ops.map((o, i) => {
    const op = typeof o.op === 'string' ? o.op.toLowerCase() : '';
    if (op !== 'add' && op !== 'replace' && op !== 'remove') throw new ScimError(400, `Operations[${i}].op must be add, replace or remove.`, 'invalidSyntax');
    if (o.path !== undefined && typeof o.path !== 'string') throw new ScimError(400, `Operations[${i}].path must be a string.`, 'invalidPath');
    if (op === 'remove' && !o.path) throw new ScimError(400, `Operations[${i}]: remove needs a path.`, 'noTarget');
    let value = o.value;
    if (!o.path && value && typeof value === 'object' && !Array.isArray(value)) {
      value = Object.fromEntries(Object.entries(value).filter(([k]) => !READ_ONLY.has(k.toLowerCase()) && k.toLowerCase() !== 'schemas'));
    } else if (!o.path && op !== 'remove') {
      throw new ScimError(400, `Operations[${i}]: without a path, value must be an object of attributes.`, 'invalidValue');
    }
    const path = o.path ? canonicalPath(o.path as string, type) : undefined;
    // Entra removes members as { path: "members", value: [{ value: id, $ref: null }] }: matched on
    // `value` alone (scim-patch would need the whole item equal), one value-path remove each.
    if (op === 'remove' && path && !path.includes('[') && Array.isArray(value) && value.every((v) => v && typeof v === 'object' && typeof (v as { value?: unknown }).value === 'string')) {
      return value.map((v) => ({ op, path: `${path}[value eq ${JSON.stringify((v as { value: string }).value)}]` }) as ScimPatchOperation);
    }
    return [{ op, ...(path ? { path } : {}), ...(value !== undefined ? { value } : {}) } as ScimPatchOperation];
  }).flat();
  try {
    return scimPatch({ ...structuredClone(resource), meta: { created: new Date(0), lastModified: new Date(0) } } as never, operations, { mutateDocument: false, treatMissingAsAdd: true }) as unknown as Resource;
  } catch (e) {
    if (e instanceof PatchLibraryError) {
      const code = (e as { scimCode?: string }).scimCode;
      throw new ScimError(400, `The patch cannot apply: ${e.message}`, code === 'noTarget' || code === 'invalidPath' || code === 'invalidValue' ? code : 'invalidValue');
    }
    if (e instanceof ScimError) throw e;
    throw new ScimError(400, `The patch cannot apply: ${(e as Error).message}`, 'invalidValue');
  }
}
