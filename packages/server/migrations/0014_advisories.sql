-- Advisories and findings (issue 13). Advisories are global: one mirror of NVD and OSV records
-- that every organisation's services are matched against; findings (vulnerabilities) stay per
-- organisation.

CREATE TABLE advisories (
  id              text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._:-]{1,100}$'),
  source          text NOT NULL CHECK (source IN ('nvd', 'osv')),
  -- The CVE this advisory is (or aliases): findings are keyed by it, so an NVD record and an OSV
  -- record of the same CVE make one finding per service. The advisory id when there is none.
  cve_id          text NOT NULL,
  aliases         text[] NOT NULL DEFAULT '{}',
  summary         text,
  published_at    timestamptz,
  modified_at     timestamptz NOT NULL,
  cvss31_vector   text,
  cvss31_score    numeric(3,1) CHECK (cvss31_score BETWEEN 0 AND 10),
  cvss40_vector   text,
  cvss40_score    numeric(3,1) CHECK (cvss40_score BETWEEN 0 AND 10),
  cvss30_vector   text,
  cvss30_score    numeric(3,1) CHECK (cvss30_score BETWEEN 0 AND 10),
  -- The score findings carry (v3.1, else v4.0, else v3.0) and its band (decisions.md).
  score           numeric(3,1) CHECK (score BETWEEN 0 AND 10),
  vector          text,
  severity        text NOT NULL CHECK (severity IN ('critical', 'high', 'medium', 'low', 'none')),
  refs            jsonb NOT NULL DEFAULT '[]',
  -- What the matcher reads: NVD `configurations`, or OSV `affected`, as imported.
  affected        jsonb NOT NULL,
  -- NVD "Rejected" or OSV `withdrawn`: kept, matched by nothing.
  withdrawn       boolean NOT NULL DEFAULT false,
  content_sha256  text NOT NULL,
  imported_at     timestamptz NOT NULL DEFAULT now(),
  -- When the row last changed in the mirror: the matcher re-matches what changed since its last run.
  changed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX advisories_changed_idx ON advisories (changed_at);
CREATE INDEX advisories_cve_idx ON advisories (cve_id);

-- Which products an advisory can affect (`part:vendor:product` of each vulnerable CPE criterion,
-- `osv:<ecosystem>:<name>` of each OSV package): the matcher's index, so a service is evaluated
-- only against the advisories of its product.
CREATE TABLE advisory_products (
  product_key  text NOT NULL,
  advisory_id  text NOT NULL REFERENCES advisories (id) ON DELETE CASCADE,
  PRIMARY KEY (product_key, advisory_id)
);
CREATE INDEX advisory_products_advisory_idx ON advisory_products (advisory_id);

-- The mirror's state: one row. `confirmed_at` is when it last changed or was confirmed current
-- (a successful import or fetch): service_cve_feed_age_seconds.
CREATE TABLE advisory_feed (
  id               boolean PRIMARY KEY DEFAULT true CHECK (id),
  url              text,
  etag             text,
  last_modified    text,
  -- NVD API increments: the lastModEndDate of the last complete pull.
  nvd_through      timestamptz,
  confirmed_at     timestamptz,
  last_attempt_at  timestamptz,
  last_error       text
);

-- The product keys of each matched service (from its CPE, or the CPE derived from vendor,
-- product and version): when advisories of a product change, its services are found here.
CREATE TABLE service_match_keys (
  organisation_id  uuid NOT NULL,
  service_id       uuid NOT NULL,
  product_key      text NOT NULL,
  PRIMARY KEY (organisation_id, service_id, product_key),
  FOREIGN KEY (organisation_id, service_id) REFERENCES services (organisation_id, id) ON DELETE CASCADE
);
CREATE INDEX service_match_keys_product_idx ON service_match_keys (organisation_id, product_key);

-- Where each organisation's matcher is: the start of its last complete run (services changed and
-- advisories changed since then, less an overlap, are matched on the next).
CREATE TABLE advisory_match_state (
  organisation_id  uuid PRIMARY KEY REFERENCES organisations (id) ON DELETE CASCADE,
  matched_at       timestamptz NOT NULL
);

-- Findings: the advisory that made each, its vector and the CPE that matched; `title`/`cvss`
-- become the API's `summary`/`score`.
ALTER TABLE vulnerabilities RENAME COLUMN title TO summary;
ALTER TABLE vulnerabilities RENAME COLUMN cvss TO score;
ALTER TABLE vulnerabilities ADD COLUMN advisory_id text;
ALTER TABLE vulnerabilities ADD COLUMN vector text;
ALTER TABLE vulnerabilities ADD COLUMN matched_cpe text;
CREATE INDEX vulnerabilities_advisory_idx ON vulnerabilities (organisation_id, cve_id);

CREATE OR REPLACE FUNCTION announce_new_vulnerabilities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (organisation_id, kind, severity, subject_type, subject_id, data)
  SELECT v.organisation_id, 'vulnerability.opened', CASE v.severity WHEN 'critical' THEN 'critical' ELSE 'warning' END,
         'vulnerability', v.id::text,
         jsonb_build_object('cveId', v.cve_id, 'advisoryId', v.advisory_id, 'severity', v.severity, 'score', v.score, 'summary', v.summary, 'hostId', v.host_id, 'serviceId', v.service_id)
  FROM new_rows v
  WHERE v.state = 'open' AND v.severity IN ('critical', 'high');
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION announce_reopened_vulnerabilities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (organisation_id, kind, severity, subject_type, subject_id, data)
  SELECT v.organisation_id, 'vulnerability.opened', CASE v.severity WHEN 'critical' THEN 'critical' ELSE 'warning' END,
         'vulnerability', v.id::text,
         jsonb_build_object('cveId', v.cve_id, 'advisoryId', v.advisory_id, 'severity', v.severity, 'score', v.score, 'summary', v.summary, 'hostId', v.host_id, 'serviceId', v.service_id, 'reopened', true)
  FROM new_rows v JOIN old_rows o ON o.organisation_id = v.organisation_id AND o.id = v.id
  WHERE v.state = 'open' AND o.state <> 'open' AND v.severity IN ('critical', 'high');
  RETURN NULL;
END $$;
