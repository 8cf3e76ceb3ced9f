import type { Module } from '../module.js';
import { keysVerb, snapshotsVerb } from './attestation.cli.js';
import { registerAttestationRoutes } from './attestation.routes.js';

/** Snapshot attestations: the service's Ed25519 signing key, the signed PDF, and its offline verifier. */
export const attestationModule: Module = {
  name: 'attestation',
  routes: (app, deps) => registerAttestationRoutes(app, deps),
  cli: { keys: keysVerb, snapshots: snapshotsVerb },
};
