/**
 * The `pi-memory` settings key (the name `@amaster.ai/pi-memory` uses, so one
 * settings file configures either package): `dataDir`, `memoryCharLimit`,
 * `userCharLimit`.
 *
 * Layers, later ones overriding top-level keys: `~/.pi/agent/settings.json`,
 * then `<agentDir>/settings.json` (when `PI_CODING_AGENT_DIR` moves it), both
 * environment-interpolated; then the project's `.pi/settings.json` only when
 * Pi trusts the project, never interpolated (a repository must not be able to
 * read the user's environment into settings).
 */
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { MemoryStore, projectIdentity, type ProjectIdentity } from '../native.mjs'
import { agentDir, memorySettings, mergeLayers, settingsKey, type SettingsLayer } from '../shared/settings.mjs'

export const CURATED_SETTINGS_KEY = 'pi-memory'

export interface CuratedSettings {
  dataDir?: string
  memoryCharLimit?: number
  userCharLimit?: number
  /** `pi-memory.dreaming` as written (parsed by `dreamingSettings`). */
  dreaming?: unknown
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Z_][A-Z0-9_]*)/g

/** `${VAR}`, `${VAR:-default}` and `$VAR` in every string; unset or empty → the default or "". */
export function interpolate(value: unknown, env: NodeJS.ProcessEnv = process.env): unknown {
  if (typeof value === 'string') {
    return value.replace(REFERENCE, (_all, braced: string | undefined, fallback: string | undefined, bare: string | undefined) => {
      const name = braced ?? bare ?? ''
      const found = env[name]
      return found === undefined || found === '' ? (fallback ?? '') : found
    })
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env))
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env)]))
  }
  return value
}

/** Interpolation yields strings: limits written as `"${LIMIT:-4000}"` become numbers. */
function numeric(value: unknown): unknown {
  return typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value
}

/** The `pi-memory` layers in order (see the module comment), each as read from its file. */
export function curatedLayers(cwd: string, projectTrusted: boolean, env: NodeJS.ProcessEnv = process.env): SettingsLayer[] {
  const layer = (file: string, interpolated: boolean): SettingsLayer => {
    const values = settingsKey(file, CURATED_SETTINGS_KEY)
    return { file, values: interpolated ? (interpolate(values, env) as Record<string, unknown>) : values }
  }
  const globalFile = join(homedir(), '.pi', 'agent', 'settings.json')
  const agentFile = join(agentDir(), 'settings.json')
  const layers = [layer(globalFile, true)]
  if (resolve(agentFile) !== resolve(globalFile)) layers.push(layer(agentFile, true))
  if (projectTrusted) layers.push(layer(join(cwd, '.pi', 'settings.json'), false))
  return layers
}

export function curatedSettings(cwd: string, projectTrusted: boolean, env: NodeJS.ProcessEnv = process.env): CuratedSettings {
  const merged = mergeLayers(curatedLayers(cwd, projectTrusted, env))
  const dataDir = typeof merged.dataDir === 'string' && merged.dataDir.trim() ? merged.dataDir.trim() : undefined
  return {
    dataDir: dataDir === undefined ? undefined : resolve(agentDir(), dataDir.replace(/^~(?=$|\/)/, homedir())),
    memoryCharLimit: numeric(merged.memoryCharLimit) as number | undefined,
    userCharLimit: numeric(merged.userCharLimit) as number | undefined,
    ...(merged.dreaming === undefined ? {} : { dreaming: merged.dreaming }),
  }
}

/** The project whose memory a session in `cwd` reads and writes, or why there is none. */
export interface CuratedProject {
  /** Set when the cwd is in a project: a git repository, or one named by `memory.projectKey` / `PI_FABRIC_MEMORY_PROJECT_KEY`. */
  project?: ProjectIdentity
  /** Why a directory that may be in a project has no project memory (metadata that fell back, an invalid key). */
  warning?: string
}

/**
 * The project of `cwd` for curated memory. A directory outside any
 * repository has no project memory unless a key names it: a store per plain
 * folder would turn every scratch and ephemeral directory into its own
 * memory bank (the field data of issue 36: 490 banks, most of them single
 * sessions). Git metadata that falls back to the cwd rule gives none either,
 * and says why. Never throws: a bad key costs the project store, not the global one.
 */
export function curatedProject(cwd: string, projectTrusted: boolean): CuratedProject {
  try {
    const key = memorySettings(agentDir(), cwd, projectTrusted).projectKey
    const identity = projectIdentity(cwd, typeof key === 'string' ? { projectKey: key } : {})
    if (identity.source !== 'cwd') return { project: identity }
    return identity.fallback ? { warning: `no project memory for ${cwd}: its git metadata is ambiguous (${identity.fallback})` } : {}
  } catch (error) {
    return { warning: `no project memory: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/** The store the settings describe, opened for `project` when given (throws `InvalidArg` on a bad limit). */
export function storeOf(settings: CuratedSettings, project?: ProjectIdentity): MemoryStore {
  return new MemoryStore({
    dir: settings.dataDir,
    memoryCharLimit: settings.memoryCharLimit,
    userCharLimit: settings.userCharLimit,
    ...(project ? { project: { key: project.key, name: project.name } } : {}),
  })
}
