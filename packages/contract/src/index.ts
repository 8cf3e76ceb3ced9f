export * from './common.js';
export * from './auth.js';
export * from './health.js';
export * from './routes.js';
export * from './openapi.js';
export * from './net.js';
export * from './inventory.js';
export * from './daemon.js';
