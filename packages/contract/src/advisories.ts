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
