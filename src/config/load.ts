import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { inexactNumbers } from './decimal-text.js';
import type { z } from 'zod';
import { configSchema, type Config } from './schema.js';
import { embeddedConfig } from './defaults.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

const WHOLE_VAR = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
const ANY_VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces `${NAME}` in every string value; a value that is only an unset variable becomes absent, and
 * so does a key left empty (YAML null, e.g. `redis_url:`).
 */
export function substituteEnv(value: unknown, env: Env): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE_VAR.exec(value);
    if (whole) {
      const v = env[whole[1] as string];
      return v === undefined || v === '' ? undefined : v;
    }
    return value.replace(ANY_VAR, (_, name: string) => env[name] ?? '');
  }
  if (Array.isArray(value)) return value.map((v) => substituteEnv(v, env));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const s = substituteEnv(v, env);
      if (s !== undefined && s !== null) out[k] = s;
    }
    return out;
  }
  return value;
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(root)';
      return `  - ${path}: ${issue.message}`;
    })
    .join('\n');
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

/** Validates a raw config tree (after YAML parsing) into a frozen, typed Config. */
export function parseConfig(raw: unknown, env: Env = {}, source = 'config'): Config {
  const substituted = substituteEnv(raw ?? {}, env);
  const result = configSchema.safeParse(substituted);
  if (!result.success) {
    throw new ConfigError(`invalid ${source}:\n${describeIssues(result.error)}`);
  }
  return deepFreeze(result.data);
}

/**
 * The only place that reads the environment and config files. Without a file, the embedded
 * defaults are used; a file's top-level keys replace the embedded ones.
 */
export function loadConfig(file: string | undefined, env: Env = process.env): Config {
  if (!file) return parseConfig(embeddedConfig, env, 'embedded config');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const doc = parseDocument(text);
  const yamlError = doc.errors[0];
  if (yamlError) throw new ConfigError(`config file ${file} is not valid YAML: ${yamlError.message}`);
  // A number written with more digits than a number holds would be read as another number.
  const inexact = inexactNumbers(doc);
  if (inexact.length > 0) {
    const lines = inexact.map(
      ({ path, written }) => `  - ${path}: ${written} has more digits than a number holds; write it in quotes ("${written}") where text is taken (prices)`,
    );
    throw new ConfigError(`invalid config file ${file}:\n${lines.join('\n')}`);
  }
  let raw: unknown;
  try {
    raw = doc.toJS();
  } catch (err) {
    throw new ConfigError(`config file ${file} is not valid YAML: ${(err as Error).message}`);
  }
  if (raw !== null && raw !== undefined && (typeof raw !== 'object' || Array.isArray(raw))) {
    throw new ConfigError(`config file ${file} must be a YAML mapping`);
  }
  // A top-level key left empty does not replace the embedded one: it is unset.
  const given = Object.entries((raw as Record<string, unknown> | null) ?? {}).filter(([, v]) => v !== null);
  const merged = { ...embeddedConfig, ...Object.fromEntries(given) };
  return parseConfig(merged, env, `config file ${file}`);
}
