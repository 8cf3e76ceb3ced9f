import type { Module } from '../module.js';
import { adminVerb } from './admin.cli.js';

/** Operator administration from the command line: `surveyor admin …`. */
export const adminModule: Module = {
  name: 'admin',
  cli: { admin: adminVerb },
};
