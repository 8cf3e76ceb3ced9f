import { z } from 'zod';
import { JsonValue, Text, Timestamp } from './common.js';

// Advisories (issue 13): the mirror of NVD and OSV records that services are matched against.

export const AdvisoryImportRequest = z
  .union([z.array(JsonValue), z.record(Text, JsonValue)])
  .describe(
    'One document as the NVD CVE API 2.0 or OSV publish it: an NVD response page (`{ "vulnerabilities": [{ "cve": … }] }`), ' +
      'one NVD `cve` record, one OSV record, or an array of OSV records. Records are told apart by shape.',
  );

export const AdvisorySkip = z.object({
  id: z.string().nullable().describe('The record\'s id, when it has a readable one.'),
  reason: z.string(),
});

export const AdvisoryImportResult = z.object({
  new: z.number().int().describe('Advisories not in the mirror before.'),
  updated: z.number().int().describe('Advisories replaced by a newer `lastModified` / `modified`.'),
  unchanged: z.number().int().describe('Advisories already in the mirror at this or a newer modification (a re-import changes nothing).'),
  skipped: z.array(AdvisorySkip).describe('Records not imported, each with why (first 100).'),
  skippedCount: z.number().int(),
  feedConfirmedAt: Timestamp.describe('The mirror is current as of this import (service_cve_feed_age_seconds starts again from here).'),
});

/** The state of the advisory mirror (shared by every organisation) and of its feed. */
export const AdvisoryMirror = z.object({
  advisories: z.number().int().describe('Advisories held, NVD and OSV together.'),
  nvd: z.number().int(),
  osv: z.number().int(),
  withdrawn: z.number().int().describe('NVD `Rejected` or OSV `withdrawn`: kept, matching nothing.'),
  feed: z.object({
    url: z.string().nullable().describe('The feed last pulled (SERVICE_ADVISORY_FEED_URL, shown without userinfo or query), or null when none was: imports only.'),
    confirmedAt: Timestamp.nullable().describe('When the mirror was last confirmed current (a feed pull, a 304, or an import).'),
    lastAttemptAt: Timestamp.nullable().describe('When the feed was last asked.'),
    lastError: z.string().nullable().describe('Why the last pull failed; null when it succeeded.'),
  }),
  uploadsAllowed: z.boolean().describe('Whether admins may upload files in the console (SERVICE_ADVISORY_UPLOAD).'),
});
