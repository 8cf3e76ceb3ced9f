-- Cloud inventory (issue 25; spec 1.1 cloud.sync and cloud.k8s, 4.6 POST /admin/cloud/{id}/sync).
--
-- An account is one AWS account (access key, or a role assumed with an external id) or one
-- Kubernetes cluster (kubeconfig). Its credentials are one JSON document sealed with AES-256-GCM
-- under SERVICE_SECRET_KEY (bound to the row), never returned; `credential_hint` is what the
-- console shows of them (an access key id's last four characters, the kubeconfig's server host).
CREATE TABLE cloud_accounts (
  organisation_id     uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
  id                  uuid NOT NULL DEFAULT gen_random_uuid(),
  kind                text NOT NULL CHECK (kind IN ('aws', 'kubernetes')),
  name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  site_id             uuid,
  enabled             boolean NOT NULL DEFAULT true,
  settings            jsonb NOT NULL DEFAULT '{}',
  credentials_sealed  text NOT NULL,
  credential_hint     text NOT NULL DEFAULT '',
  -- The provider's own name for what the credentials reach (the AWS account number, the cluster's
  -- server): the namespace of the fingerprints (`aws:<account>:<instance>`, `k8s:<cluster>:<uid>`).
  provider_account    text,
  -- The last sync: when it started, how long it took, its outcome, what it counted and skipped.
  last_sync_at        timestamptz,
  last_sync_ms        integer,
  last_sync_status    text CHECK (last_sync_status IN ('ok', 'failed')),
  last_sync_error     text,
  last_sync_counts    jsonb NOT NULL DEFAULT '{}',
  last_sync_warnings  text[] NOT NULL DEFAULT '{}',
  -- Kubernetes: the list resourceVersion per resource kind of the last full collection.
  sync_cursor         jsonb NOT NULL DEFAULT '{}',
  -- A sync in progress holds the account until then (a scheduled tick and a press never sync one
  -- account at once; a process that died mid-sync frees it when the lease runs out).
  sync_lease_until    timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, id),
  FOREIGN KEY (organisation_id, site_id) REFERENCES sites (organisation_id, id) ON DELETE SET NULL (site_id)
);
CREATE UNIQUE INDEX cloud_accounts_name_key ON cloud_accounts (organisation_id, lower(name));

-- What the provider lists, one row per resource (instance, network interface of no instance,
-- node, pod, service, ingress, VPC, subnet): its provenance beside the host it became (`host_id`; null for a network, or a
-- resource without an address). `data` is the provider's record as the console shows it (state,
-- type, tags or labels, VPC, subnet, security groups, workload, …); `inbound` the security-group
-- rules, `ports` the ports a Kubernetes service publishes (with whether the internet reaches
-- them), `public_addresses` those the internet routes to. `content_hash` lets a sync with nothing
-- changed write nothing. `gone_at`: the first sync that no longer listed it.
CREATE TABLE cloud_resources (
  organisation_id   uuid NOT NULL,
  account_id        uuid NOT NULL,
  provider_id       text NOT NULL,
  kind              text NOT NULL CHECK (kind IN ('instance', 'interface', 'node', 'pod', 'service', 'ingress', 'vpc', 'subnet')),
  host_id           uuid,
  name              text,
  state             text NOT NULL DEFAULT '',
  location          text,
  public_addresses  inet[] NOT NULL DEFAULT '{}',
  labels            jsonb NOT NULL DEFAULT '{}',
  data              jsonb NOT NULL DEFAULT '{}',
  inbound           jsonb NOT NULL DEFAULT '[]',
  ports             jsonb NOT NULL DEFAULT '[]',
  content_hash      text NOT NULL,
  first_seen_at     timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  gone_at           timestamptz,
  PRIMARY KEY (organisation_id, account_id, provider_id),
  FOREIGN KEY (organisation_id, account_id) REFERENCES cloud_accounts (organisation_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE SET NULL (host_id)
);
-- A host's provenance (the host page, the hosts filter, a scan session sparing what a sync lists).
CREATE INDEX cloud_resources_host_idx ON cloud_resources (organisation_id, host_id) WHERE host_id IS NOT NULL;
