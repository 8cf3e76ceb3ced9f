import { runCli } from './main.js';

const code = await runCli(process.argv.slice(2), {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
  env: process.env,
});
process.exitCode = code;
