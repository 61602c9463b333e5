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

/** One settings file's object under a key; later layers override earlier ones key by key. */
export interface SettingsLayer {
  file: string
  values: Record<string, unknown>
}

/** The `memory` layers: global `<agentDir>/settings.json`, then the project's `.pi/settings.json` only when Pi trusts the project. */
export function memoryLayers(dir: string, cwd: string, projectTrusted: boolean): SettingsLayer[] {
  const files = [join(dir, 'settings.json'), ...(projectTrusted ? [join(cwd, '.pi', 'settings.json')] : [])]
  return files.map((file) => ({ file, values: settingsKey(file, 'memory') }))
}

export function mergeLayers(layers: SettingsLayer[]): Record<string, unknown> {
  return Object.assign({}, ...layers.map((layer) => layer.values))
}

/** The `memory` settings object in effect (see {@link memoryLayers}). */
export function memorySettings(dir: string, cwd: string, projectTrusted: boolean): Record<string, unknown> {
  return mergeLayers(memoryLayers(dir, cwd, projectTrusted))
}
