import type { Kysely } from 'kysely';
import type { Actor } from '../audit/audit.repo.js';
import type { Config } from '../config.js';
import { scimBase } from '../scim/settings.service.js';
import { UsageError, type FlagSpec, parseFlags } from '../cli/args.js';
import { withMigratedDatabase } from '../db/open.js';
import type { DB } from '../db/schema.js';
import type { CliVerb } from '../module.js';
import * as admin from './admin.service.js';
import { type MergeReport, mergeDuplicateHosts } from './duplicates.service.js';

interface AdminCommand {
  flags: FlagSpec;
  required: string[];
  run(db: Kysely<DB>, actor: Actor, f: Record<string, string | undefined>, config: Config): Promise<Record<string, unknown>>;
  human(result: Record<string, unknown>): string;
}

/** A flag's value as the commands take it: text, `'true'` for a switch given, undefined when absent. */
const s = (v: unknown) => (typeof v === 'string' ? v : v === true ? 'true' : undefined);

const adminCommands: Record<string, AdminCommand> = {
  'create-org': {
    flags: { name: 'string', 'owner-email': 'string', 'owner-password': 'string' },
    required: ['name', 'owner-email'],
    run: (db, actor, f) => admin.createOrganisation(db, actor, { name: f.name!, ownerEmail: f['owner-email']!, ownerPassword: f['owner-password'] }),
    human: (r) => `Created organisation ${r.organisationId} with owner ${r.userId}${r.generatedPassword ? `; one-time password: ${r.generatedPassword}` : ''}`,
  },
  'create-user': {
    flags: { org: 'string', email: 'string', role: 'string', password: 'string' },
    required: ['org', 'email', 'role'],
    run: (db, actor, f) => admin.createUser(db, actor, { org: f.org!, email: f.email!, role: f.role!, password: f.password }),
    human: (r) => `User ${r.userId} added${r.generatedPassword ? `; one-time password: ${r.generatedPassword}` : ''}`,
  },
  'create-api-key': {
    flags: { org: 'string', user: 'string', scopes: 'string', name: 'string', kind: 'string' },
    required: ['org', 'user', 'scopes'],
    run: (db, actor, f) => {
      const kind = f.kind ?? 'api';
      if (!['api', 'metrics', 'scim'].includes(kind)) throw new UsageError('--kind must be api, metrics or scim');
      return admin.createApiKey(db, actor, {
        org: f.org!, userEmail: f.user!, scopes: f.scopes!.split(',').map((x) => x.trim()).filter(Boolean), name: f.name, kind: kind as 'api',
      });
    },
    human: (r) => `Key ${r.id} (${(r.scopes as string[]).join(', ')}):\n${r.token}\nStore it now; it is not shown again.`,
  },
  'create-scim-token': {
    flags: { org: 'string', user: 'string', name: 'string', 'expires-days': 'string' },
    required: ['org'],
    run: async (db, actor, f, config) => ({ ...(await admin.createScimToken(db, actor, { org: f.org!, userEmail: f.user, name: f.name, expiresDays: f['expires-days'] })), baseUrl: scimBase(config.baseUrl) }),
    human: (r) => `SCIM token ${r.id} (owned by ${r.userEmail}${r.expiresAt ? `, expires ${r.expiresAt}` : ''}):\n${r.token}\nSCIM base URL: ${r.baseUrl}\nStore it now; it is not shown again.`,
  },
  'create-daemon-key': {
    flags: { org: 'string', name: 'string' },
    required: ['org'],
    run: (db, actor, f) => admin.createDaemonKey(db, actor, { org: f.org!, name: f.name }),
    human: (r) => `Daemon key ${r.id}:\n${r.token}\nStore it now; it is not shown again.`,
  },
  'set-role': {
    flags: { org: 'string', user: 'string', role: 'string' },
    required: ['org', 'user', 'role'],
    run: (db, actor, f) => admin.setRole(db, actor, { org: f.org!, userEmail: f.user!, role: f.role! }),
    human: (r) => `Role of ${r.userId}: ${r.previousRole} -> ${r.role}`,
  },
  'revoke-key': {
    flags: { id: 'string' },
    required: ['id'],
    run: (db, actor, f) => admin.revokeKey(db, actor, { id: f.id! }),
    human: (r) => `Key ${r.id} revoked`,
  },
  'merge-duplicate-hosts': {
    flags: { org: 'string', 'dry-run': 'boolean' },
    required: [],
    run: async (db, actor, f) => ({ ...(await mergeDuplicateHosts(db, actor, { org: f.org, dryRun: f['dry-run'] === 'true' })) }),
    human: (r) => {
      const m = r as unknown as MergeReport;
      const lines = m.merges.map((g) => `  ${g.survivorId} <- ${g.mergedHostIds.join(', ')}`);
      return [`${m.dryRun ? 'Would merge' : 'Merged'} ${m.hostsMerged} duplicate host(s) into ${m.merges.length} (${m.organisations} organisation(s) checked)`, ...lines].join('\n');
    },
  },
};

/** `surveyor admin …`: organisations, users, roles and keys, straight on the database. */
export const adminVerb: CliVerb = {
  usage: [
    'admin create-org --name NAME --owner-email EMAIL [--owner-password PW] [--json]',
    'admin create-user --org ORG --email EMAIL --role viewer|editor|admin|owner [--password PW] [--json]',
    'admin create-api-key --org ORG --user EMAIL --scopes s1,s2 [--name N] [--kind api|metrics|scim] [--json]',
    'admin create-scim-token --org ORG [--user EMAIL] [--name N] [--expires-days N] [--json]',
    'admin create-daemon-key --org ORG [--name N] [--json]',
    'admin set-role --org ORG --user EMAIL --role ROLE [--json]',
    'admin revoke-key --id ID [--json]',
    'admin merge-duplicate-hosts [--org ORG] [--dry-run] [--json]',
  ],
  help: `Manages organisations, users, roles and keys straight on the database (migrating it first),
each change leaving an audit-log row by actor "cli". ORG is an organisation id or name. A token or
generated password is printed once. With --json the result is one JSON document on stdout.
Exit 2 on bad arguments or a refused request (one line on stderr).`,
  async run([sub, ...args], io, config) {
    const cmd = sub ? adminCommands[sub] : undefined;
    if (!cmd) throw new UsageError(`unknown admin command ${JSON.stringify(sub ?? '')} (one of ${Object.keys(adminCommands).join(', ')})`);
    const f = parseFlags(args, { ...cmd.flags, json: 'boolean' }, cmd.required);
    return withMigratedDatabase(config, async (database) => {
      const result = await cmd.run(database.db, { type: 'cli' }, Object.fromEntries(Object.entries(f).map(([k, v]) => [k, s(v)])), config);
      io.out(f.json ? JSON.stringify(result) : cmd.human(result));
      return 0;
    });
  },
};
