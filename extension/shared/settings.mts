import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expandPiPath, piAgentDir } from '../native.mjs'

/** Pi's agent dir, as Pi's `getAgentDir()` computes it (the addon's rule, shared with its own default). */
export function agentDir(): string {
  return piAgentDir(process.env.PI_CODING_AGENT_DIR)
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

/**
 * Pi's custom session dir as Pi resolves it when no `--session-dir` is given:
 * `PI_CODING_AGENT_SESSION_DIR`, else `sessionDir` of the project's
 * `.pi/settings.json` (only when Pi trusts the project), else of
 * `<agentDir>/settings.json`. Relative paths are relative to the cwd (the
 * engine resolves them); undefined = Pi's default layout only.
 */
export function sessionDirSetting(dir: string, cwd: string, projectTrusted: boolean, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.PI_CODING_AGENT_SESSION_DIR
  if (fromEnv) return expandPiPath(fromEnv)
  const read = (file: string) => {
    try {
      const value = (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> | null)?.sessionDir
      return typeof value === 'string' && value.trim() ? expandPiPath(value.trim()) : undefined
    } catch {
      return undefined
    }
  }
  return (projectTrusted ? read(join(cwd, '.pi', 'settings.json')) : undefined) ?? read(join(dir, 'settings.json'))
}

/**
 * The session dir of Pi's live SessionManager (`getSessionDir()`: what Pi
 * itself chose from `--session-dir`, the environment and the settings), else
 * {@link sessionDirSetting}. An in-memory session reports "".
 */
export function liveSessionDir(
  session: { getSessionDir?: () => string | undefined } | undefined,
  dir: string,
  cwd: string,
  projectTrusted: boolean,
): string | undefined {
  return session?.getSessionDir?.() || sessionDirSetting(dir, cwd, projectTrusted)
}
