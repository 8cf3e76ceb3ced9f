export class UsageError extends Error {
  override name = 'UsageError';
}

export interface FlagSpec {
  [flag: string]: 'string' | 'boolean';
}

/** Parses `--flag value` / `--flag=value` / `--switch`. Throws UsageError on an unknown flag or a missing value. */
export function parseFlags(argv: string[], spec: FlagSpec, required: string[] = []): Record<string, string | boolean | undefined> {
  const out: Record<string, string | boolean | undefined> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const m = /^--([a-z][a-z-]*)(?:=(.*))?$/.exec(arg);
    if (!m) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
    const [, name, inline] = m as unknown as [string, string, string | undefined];
    const kind = spec[name];
    if (!kind) throw new UsageError(`unknown option --${name} (accepted: ${Object.keys(spec).map((f) => `--${f}`).join(', ')})`);
    if (kind === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      out[name] = true;
    } else {
      const value = inline ?? argv[++i];
      if (value === undefined || (inline === undefined && value.startsWith('--'))) throw new UsageError(`--${name} needs a value`);
      out[name] = value;
    }
  }
  for (const r of required) if (out[r] === undefined) throw new UsageError(`--${r} is required`);
  return out;
}
