-- What a distribution's own records say of a finding's service build (issue 29, backports): the
-- banner named a distribution package version (`OpenSSH_9.2p1 Debian-2+deb12u3`), and the
-- distribution's OSV record says whether that build is fixed ({ distribution, ecosystem, package,
-- version, verdict: fixed | affected | unknown, fixedIn, advisoryId }). A match the distribution
-- says is fixed is kept resolved with this as its evidence. Null when no banner names a build.
ALTER TABLE vulnerabilities ADD COLUMN distribution jsonb;
