-- The CPEs of a host itself (issue 29): its operating system and hardware (`o` and `h` parts), as
-- the daemon reports them from nmap's service and OS detection. NVD's AND configurations name
-- them as the platform an application or firmware is vulnerable on; until now only the CPEs of a
-- host's services were known, so such a configuration could match only by chance. A report
-- replaces the host's set.
CREATE TABLE host_platform_cpes (
  organisation_id  uuid NOT NULL,
  host_id          uuid NOT NULL,
  cpe              text NOT NULL CHECK (length(cpe) <= 300),
  seen_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (organisation_id, host_id, cpe),
  FOREIGN KEY (organisation_id, host_id) REFERENCES hosts (organisation_id, id) ON DELETE CASCADE
);
