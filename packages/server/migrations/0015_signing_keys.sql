-- The service's own signing keys (issue 15: snapshot attestations). One row per purpose, made on
-- first use by whichever process gets there first (the primary key admits one; the others read
-- the winner's). The private key is stored sealed (AES-256-GCM under SERVICE_SECRET_KEY, or the
-- data folder's secret.key), never in the clear; the public key and its fingerprint are public.
CREATE TABLE service_signing_keys (
  purpose text PRIMARY KEY CHECK (purpose IN ('attestation')),
  algorithm text NOT NULL CHECK (algorithm = 'ed25519'),
  public_key_pem text NOT NULL,
  -- 'sha256:' and the lowercase hex SHA-256 of the DER SubjectPublicKeyInfo
  fingerprint text NOT NULL,
  private_key_sealed text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
