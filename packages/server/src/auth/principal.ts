import type { Role, Scope } from '@surveyor/contract';

/** Who is calling. The organisation always comes from here, never from the request. */
export type Principal =
  /** `keyKind`: an API key, a metrics key, or a SCIM token (only a SCIM token opens /api/scim/v2). */
  | { kind: 'apiKey'; organisationId: string; keyId: string; userId: string; role: Role; keyScopes: Scope[]; keyKind: 'api' | 'metrics' | 'scim' }
  /** `daemonId` is the X-Daemon-ID the caller claims; the daemon endpoints check it belongs to the key's organisation. */
  | { kind: 'daemon'; organisationId: string; keyId: string; daemonId: string | null }
  | {
      kind: 'session';
      organisationId: string;
      organisationName: string;
      sessionId: string;
      userId: string;
      email: string;
      role: Role;
      csrfToken: string;
      mustChangePassword: boolean;
      expiresAt: Date;
    };
