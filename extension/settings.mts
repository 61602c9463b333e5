import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** Pi's agent dir, as Pi's `getAgentDir()` computes it. */
export function agentDir(): string {
  const fromEnv = process.env.PI_CODING_AGENT_DIR
  if (fromEnv) return fromEnv === '~' ? homedir() : fromEnv.replace(/^~(?=\/)/, homedir())
  return join(homedir(), '.pi', 'agent')
}

/** One top-level object of a settings file; `{}` when missing, unparsable or not an object (as Pi does). */
export function settingsKey(file: string, key: string): Record<string, unknown> {
  try {
    const value = (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> | null)?.[key]
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/**
 * The `memory` settings: global `<agentDir>/settings.json`, overridden key by
 * key by the project's `.pi/settings.json` only when Pi trusts the project.
 */
export function memorySettings(dir: string, cwd: string, projectTrusted: boolean): Record<string, unknown> {
  const global = settingsKey(join(dir, 'settings.json'), 'memory')
  return projectTrusted ? { ...global, ...settingsKey(join(cwd, '.pi', 'settings.json'), 'memory') } : global
}
