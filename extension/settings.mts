import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** Pi's agent dir, as Pi's `getAgentDir()` computes it. */
export function agentDir(): string {
  const fromEnv = process.env.PI_CODING_AGENT_DIR
  if (fromEnv) return fromEnv === '~' ? homedir() : fromEnv.replace(/^~(?=\/)/, homedir())
  return join(homedir(), '.pi', 'agent')
}

function memoryKey(file: string): Record<string, unknown> {
  try {
    const settings = JSON.parse(readFileSync(file, 'utf8')) as { memory?: unknown }
    const memory = settings?.memory
    return memory && typeof memory === 'object' && !Array.isArray(memory) ? (memory as Record<string, unknown>) : {}
  } catch {
    // A missing or unparsable settings file counts as {} (Pi does the same).
    return {}
  }
}

/**
 * The `memory` settings: global `<agentDir>/settings.json`, overridden key by
 * key by the project's `.pi/settings.json` only when Pi trusts the project.
 */
export function memorySettings(dir: string, cwd: string, projectTrusted: boolean): Record<string, unknown> {
  const global = memoryKey(join(dir, 'settings.json'))
  return projectTrusted ? { ...global, ...memoryKey(join(cwd, '.pi', 'settings.json')) } : global
}
