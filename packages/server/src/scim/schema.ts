// The SCIM resource schemas this service provider supports (RFC 7643 sections 4, 5, 6, 7), defined
// once: the Schemas discovery document is printed from these definitions, and the filter
// evaluator, the projection (`attributes`, `excludedAttributes`) and the input normaliser read
// them for attribute names (case-insensitive), types and caseExact.

export const URN = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  enterprise: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

export type AttrType = 'string' | 'boolean' | 'dateTime' | 'reference' | 'complex' | 'integer';

export interface Attr {
  name: string;
  type: AttrType;
  description: string;
  multiValued?: boolean;
  required?: boolean;
  caseExact?: boolean;
  mutability?: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned?: 'always' | 'never' | 'default' | 'request';
  uniqueness?: 'none' | 'server' | 'global';
  canonicalValues?: string[];
  referenceTypes?: string[];
  subAttributes?: Attr[];
}

const str = (name: string, description: string, extra: Partial<Attr> = {}): Attr => ({ name, type: 'string', description, ...extra });

/** A multi-valued attribute of value/display/type/primary (emails, phoneNumbers). */
const multi = (name: string, description: string, types: string[]): Attr => ({
  name,
  type: 'complex',
  multiValued: true,
  description,
  subAttributes: [
    str('value', `The ${name} value.`),
    str('display', 'A human-readable name.'),
    str('type', 'A label.', { canonicalValues: types }),
    { name: 'primary', type: 'boolean', description: 'The primary value (at most one).' },
  ],
});

const member = (name: string, description: string, referenceTypes: string[], mutability: Attr['mutability']): Attr => ({
  name,
  type: 'complex',
  multiValued: true,
  mutability,
  description,
  subAttributes: [
    str('value', 'The id of the member resource.', { mutability: mutability === 'readOnly' ? 'readOnly' : 'immutable' }),
    { name: '$ref', type: 'reference', referenceTypes, description: 'The URI of the member resource.', mutability: mutability === 'readOnly' ? 'readOnly' : 'immutable' },
    str('display', 'A human-readable name.', { mutability: 'readOnly' }),
    str('type', 'The member\'s resource type.', { canonicalValues: ['User', 'Group'], mutability: mutability === 'readOnly' ? 'readOnly' : 'immutable' }),
  ],
});

/** Attributes every resource has (RFC 7643 3.1). */
export const commonAttrs: Attr[] = [
  str('id', 'Unique identifier issued by the service provider.', { caseExact: true, mutability: 'readOnly', returned: 'always', uniqueness: 'server' }),
  str('externalId', 'The identifier the provisioning client gives the resource.', { caseExact: true }),
  {
    name: 'meta',
    type: 'complex',
    mutability: 'readOnly',
    description: 'Resource metadata.',
    subAttributes: [
      str('resourceType', 'User or Group.', { caseExact: true, mutability: 'readOnly' }),
      { name: 'created', type: 'dateTime', mutability: 'readOnly', description: 'When the resource was added.' },
      { name: 'lastModified', type: 'dateTime', mutability: 'readOnly', description: 'When the resource last changed.' },
      { name: 'location', type: 'reference', referenceTypes: ['uri'], mutability: 'readOnly', description: 'The resource\'s URI.' },
      str('version', 'The resource\'s version (its ETag).', { caseExact: true, mutability: 'readOnly' }),
    ],
  },
];

export const userAttrs: Attr[] = [
  str('userName', 'Unique identifier for the user, as the identity provider knows it; an email address, or backed by one in emails.', { required: true, uniqueness: 'server' }),
  {
    name: 'name',
    type: 'complex',
    description: 'The components of the user\'s name.',
    subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) => str(n, `The ${n} part of the name.`)),
  },
  str('displayName', 'The name shown to people.'),
  str('nickName', 'A casual name.'),
  { name: 'profileUrl', type: 'reference', referenceTypes: ['external'], description: 'A URI of the user\'s online profile.' },
  str('title', 'The user\'s title.'),
  str('userType', 'The relationship to the organisation.'),
  str('preferredLanguage', 'Preferred written or spoken language.'),
  str('locale', 'Default location for localisation.'),
  str('timezone', 'Time zone, in the IANA format.'),
  { name: 'active', type: 'boolean', description: 'False deactivates the member: sessions end at once and keys stop working until reactivated.' },
  str('password', 'Sets the sign-in password of a person new to the service (never returned).', { mutability: 'writeOnly', returned: 'never' }),
  multi('emails', 'Email addresses; the primary (or work, or first) one is the sign-in email of a new person.', ['work', 'home', 'other']),
  multi('phoneNumbers', 'Phone numbers.', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
  member('groups', 'The groups the user belongs to (change group membership through Groups).', ['Group'], 'readOnly'),
];

export const enterpriseAttrs: Attr[] = [
  str('employeeNumber', 'Numeric or alphanumeric identifier assigned by the organisation.'),
  str('costCenter', 'Cost center.'),
  str('organization', 'Organisation.'),
  str('division', 'Division.'),
  str('department', 'Department.'),
  {
    name: 'manager',
    type: 'complex',
    description: 'The user\'s manager.',
    subAttributes: [
      str('value', 'The id of the manager\'s User.'),
      { name: '$ref', type: 'reference', referenceTypes: ['User'], description: 'The URI of the manager\'s User.' },
      str('displayName', 'The manager\'s name.', { mutability: 'readOnly' }),
    ],
  },
];

export const groupAttrs: Attr[] = [
  str('displayName', 'The group\'s name; mapped to a role in Settings → SCIM.', { required: true, uniqueness: 'server' }),
  member('members', 'The users in the group.', ['User'], 'readWrite'),
];

export interface ResourceSchema {
  id: string;
  name: string;
  description: string;
  attributes: Attr[];
}

export const schemas: ResourceSchema[] = [
  { id: URN.user, name: 'User', description: 'A member of the organisation.', attributes: userAttrs },
  { id: URN.group, name: 'Group', description: 'A group of members; its name maps to a role.', attributes: groupAttrs },
  { id: URN.enterprise, name: 'EnterpriseUser', description: 'Enterprise User extension.', attributes: enterpriseAttrs },
];

/** The attributes of a resource type as the filter and projection see them: common, core, and extension (as one complex attribute named by its URN). */
export function attributesOf(type: 'User' | 'Group'): Attr[] {
  if (type === 'Group') return [...commonAttrs, ...groupAttrs];
  return [...commonAttrs, ...userAttrs, { name: URN.enterprise, type: 'complex', description: 'Enterprise User extension.', subAttributes: enterpriseAttrs }];
}

/** The definition named `name` (case-insensitive) among `attrs`. */
export function findAttr(attrs: readonly Attr[], name: string): Attr | undefined {
  const lower = name.toLowerCase();
  return attrs.find((a) => a.name.toLowerCase() === lower);
}

/**
 * Splits an attribute path into names: `name.givenName` → [name, givenName]; a schema URN prefix
 * is resolved (`urn:…:core:2.0:User:userName` → [userName]; `urn:…:enterprise:2.0:User:manager.value`
 * → [<enterprise urn>, manager, value]). Case-insensitive on the URN.
 */
export function splitPath(path: string, type: 'User' | 'Group'): string[] {
  const lower = path.toLowerCase();
  for (const urn of [URN.enterprise, type === 'User' ? URN.user : URN.group]) {
    if (lower === urn.toLowerCase()) return urn === URN.enterprise ? [URN.enterprise] : [];
    if (lower.startsWith(`${urn.toLowerCase()}:`)) {
      const rest = path.slice(urn.length + 1).split('.');
      return urn === URN.enterprise ? [URN.enterprise, ...rest] : rest;
    }
  }
  return path.split('.');
}

function describe(a: Attr): Record<string, unknown> {
  return {
    name: a.name,
    type: a.type,
    multiValued: a.multiValued ?? false,
    description: a.description,
    required: a.required ?? false,
    ...(a.type === 'string' || a.type === 'reference' ? { caseExact: a.caseExact ?? false } : {}),
    ...(a.canonicalValues ? { canonicalValues: a.canonicalValues } : {}),
    mutability: a.mutability ?? 'readWrite',
    returned: a.returned ?? 'default',
    uniqueness: a.uniqueness ?? 'none',
    ...(a.referenceTypes ? { referenceTypes: a.referenceTypes } : {}),
    ...(a.subAttributes ? { subAttributes: a.subAttributes.map(describe) } : {}),
  };
}

/** The Schemas documents (RFC 7643 section 7), each with its own meta. */
export function schemaDocuments(base: string) {
  return schemas.map((s) => ({
    schemas: [URN.schema],
    id: s.id,
    name: s.name,
    description: s.description,
    attributes: s.attributes.map(describe),
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${s.id}` },
  }));
}

/** The ResourceTypes documents (RFC 7643 section 6). */
export function resourceTypeDocuments(base: string) {
  return [
    { schemas: [URN.resourceType], id: 'User', name: 'User', endpoint: '/Users', description: 'Members of the organisation', schema: URN.user, schemaExtensions: [{ schema: URN.enterprise, required: false }], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
    { schemas: [URN.resourceType], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'Groups mapped to roles', schema: URN.group, schemaExtensions: [], meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
  ];
}

/** Largest page a list answers (a bigger `count` is answered with this many, RFC 7644 3.4.2.4). */
export const MAX_RESULTS = 200;
/** Most operations one PATCH may carry. */
export const MAX_OPERATIONS = 1000;
/** Largest SCIM request body. */
export const MAX_BODY_BYTES = 1_048_576;

/** The ServiceProviderConfig document (RFC 7643 section 5). */
export function serviceProviderConfig(base: string, docs: string) {
  return {
    schemas: [URN.serviceProviderConfig],
    documentationUri: docs,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      { type: 'oauthbearertoken', name: 'SCIM token', description: 'Authorization: Bearer <SCIM token> minted in Settings → SCIM or by `surveyor admin create-scim-token`.', documentationUri: docs, primary: true },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}
