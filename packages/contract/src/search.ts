import { z } from 'zod';
import { Text } from './common.js';
import { Host, Network, Service, Severity } from './inventory.js';

// The console's one search box (issue 23): hosts, services, CVEs and networks for one term,
// a few of each with how many match, so "see all N" opens the right list with the filter applied.

/** Hosts are counted up to this many (their search reads full rows); beyond it `total` is a lower bound. */
export const SEARCH_HOST_COUNT_CAP = 100;

export const SearchQuery = z.strictObject({
  q: Text.trim()
    .min(2, 'q needs at least 2 characters')
    .max(200)
    .describe(
      'At least 2 characters. Hosts: the host search of `GET /api/v1/hosts?search=` (a UUID, an address or CIDR, else a name). ' +
        'Services (present only): `cpe:2.3:…` by CPE (as the `cpe` filter); "product version" (`apache 2.4.49`: a last word starting with a digit) by product and version; anything else by product (substring). ' +
        'CVEs: the findings whose CVE (or advisory) id starts with it. Networks: name (substring), the start of the CIDR text, or a CIDR overlapping the address or CIDR given. Case-insensitive.',
    ),
  limit: z.coerce.number().int().min(1).max(20).default(5).describe('Items per group, 1 to 20 (default 5).'),
});

const counted = {
  total: z.number().int().describe('How many match in all.'),
  capped: z.boolean().describe(`True when \`total\` is a lower bound (hosts are counted up to ${SEARCH_HOST_COUNT_CAP}).`),
};

/** One advisory the organisation has findings of. */
export const SearchCve = z.object({
  cveId: z.string(),
  summary: z.string().nullable(),
  severity: Severity.describe('The most severe of its findings.'),
  score: z.number().nullable(),
  findings: z.number().int().describe('Findings of it, every state.'),
  hosts: z.number().int(),
});

export const SearchResult = z.object({
  q: z.string().describe('The term as searched (trimmed).'),
  hosts: z.object({ data: z.array(Host), ...counted }),
  services: z.object({ data: z.array(Service), ...counted, filter: z.object({ product: z.string().optional(), version: z.string().optional(), cpe: z.string().optional() }).describe('The services filters that list the same services.') }),
  cves: z.object({ data: z.array(SearchCve), ...counted }),
  networks: z.object({ data: z.array(Network), ...counted }),
});
