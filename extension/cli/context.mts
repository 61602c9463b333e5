/**
 * What every command runs against: the agent dir (and where it came from),
 * the project, the settings Pi would use, and the session files on disk.
 */
import { opendirSync, readdirSync, statSync, type Dir } from 'node:fs'
import { join, resolve } from 'node:path'
import { option, type Parsed } from './args.mjs'
import { CliError, EXIT } from './output.mjs'
import { curatedProject, curatedSettings, storeOf } from '../curated/settings.mjs'
import { createMemory, type Memory } from '../recall/create-memory.mjs'
import { expandPiPath, sessionHeader } from '../native.mjs'
import { agentDir, memorySettings, sessionDirSetting } from '../shared/settings.mjs'
import type { MemoryStore } from 'pi-fabric-memory/native'

export type Origin = 'flag' | 'env' | 'default'

export interface Context {
  parsed: Parsed
  json: boolean
  quiet: boolean
  agentDir: string
  agentDirOrigin: Origin
  cwd: string
  /** `--trust-project`: read the project's `.pi/settings.json` as Pi does for a trusted project. */
  trusted: boolean
  /** Pi's custom session dir: `--session-dir`, else the environment and settings as Pi reads them. */
  sessionDir?: string
}

/**
 * Resolves the agent dir once and exports it as `PI_CODING_AGENT_DIR`, so
 * the settings readers and the native defaults (memory dir, index dir)
 * follow `--agent-dir` exactly as they follow Pi's own variable.
 */
export function createContext(parsed: Parsed): Context {
  const flag = option(parsed, 'agent-dir')
  const origin: Origin = flag !== undefined ? 'flag' : process.env.PI_CODING_AGENT_DIR ? 'env' : 'default'
  if (flag !== undefined) process.env.PI_CODING_AGENT_DIR = resolve(expandPiPath(flag))
  const cwd = resolve(option(parsed, 'cwd') ?? process.cwd())
  const trusted = parsed.options.has('trust-project')
  const sessionDirFlag = option(parsed, 'session-dir')
  return {
    parsed,
    json: parsed.options.has('json'),
    quiet: parsed.options.has('quiet'),
    agentDir: resolve(agentDir()),
    agentDirOrigin: origin,
    cwd,
    trusted,
    // The flag is relative to the shell's directory, as Pi's; a setting to the project's (the engine resolves it).
    sessionDir: sessionDirFlag ? resolve(expandPiPath(sessionDirFlag)) : sessionDirSetting(agentDir(), cwd, trusted),
  }
}

/** Where Pi keeps session files: `<agentDir>/sessions/<encoded cwd>/*.jsonl`. */
export function sessionsDir(ctx: Context): string {
  return join(ctx.agentDir, 'sessions')
}

export interface ProjectFiles {
  dir: string
  sessions: number
  bytes: number
}

/** The project directories sessions may be in (Pi's custom session dir holds every cwd's sessions, flat). */
function sessionDirs(ctx: Context): string[] {
  const root = sessionsDir(ctx)
  const dirs = safeReaddir(root).map((name) => join(root, name)).filter(isDir)
  if (ctx.sessionDir && !dirs.includes(resolve(ctx.sessionDir))) dirs.push(resolve(ctx.sessionDir))
  return dirs
}

/** The session files per project directory (by name only; headers are not read). */
export function sessionFiles(ctx: Context): ProjectFiles[] {
  return sessionDirs(ctx)
    .map((dir) => {
      const files = safeReaddir(dir).filter((file) => file.endsWith('.jsonl'))
      return { dir, sessions: files.length, bytes: files.reduce((sum, file) => sum + sizeOf(join(dir, file)), 0) }
    })
    .filter((project) => project.sessions > 0)
}

/** Stops a command that reads history when there is none to read. */
export function requireSessions(ctx: Context): void {
  // The first session file found is enough: sizing every one (a stat each) took ~10 ms of a recall at 1,000
  // sessions, and reading a whole dir ~3 ms of one at 5,000.
  if (sessionDirs(ctx).some(holdsSessionFile)) return
  const where = sessionsDir(ctx)
  throw new CliError(
    `no Pi sessions under ${where}; set --agent-dir or PI_CODING_AGENT_DIR`,
    'no_sessions',
    EXIT.noSessions,
    `agent dir from ${ctx.agentDirOrigin === 'default' ? 'the default (~/.pi/agent)' : ctx.agentDirOrigin === 'env' ? 'PI_CODING_AGENT_DIR' : '--agent-dir'}; run "pi-fabric-memory doctor" for details`,
  )
}

/** The `memory` settings Pi would use here (see the README's Configuration). */
export function memoryConfig(ctx: Context): Record<string, unknown> {
  return memorySettings(ctx.agentDir, ctx.cwd, ctx.trusted)
}

/**
 * Recall over the agent dir with Pi's settings; invalid settings are a CLI error naming the key. Never watching
 * the session files: a command is one short process, and a watch per session file cost more to arm and to tear
 * down at exit (~11 ms of a recall at 1,000 sessions, most of it after the answer) than the stats it saves.
 */
export function openMemory(ctx: Context, config: Record<string, unknown> = memoryConfig(ctx)): Memory {
  try {
    return createMemory({ agentDir: ctx.agentDir, cwd: ctx.cwd, sessionDir: ctx.sessionDir, config: { ...config, watchSessions: false } })
  } catch (error) {
    throw new CliError(`invalid settings: ${(error as Error).message}`, 'invalid_settings')
  }
}

/** The curated store the `pi-memory` settings describe (as the extension builds it). */
export function openStore(ctx: Context): MemoryStore {
  try {
    return storeOf(curatedSettings(ctx.cwd, ctx.trusted), curatedProject(ctx.cwd, ctx.trusted).project)
  } catch (error) {
    throw new CliError(`invalid settings: ${(error as Error).message}`, 'invalid_settings')
  }
}

/** The `cwd` of a session file's header. */
export function headerCwd(file: string): string | undefined {
  // Rust's reader, as recall reads headers: never blocks on a FIFO, skips blank lines, needs a session header.
  return sessionHeader(file)?.cwd || undefined
}

/** Whether `dir` holds a `*.jsonl` file, reading its entries only until one is found. */
function holdsSessionFile(dir: string): boolean {
  let entries: Dir
  try {
    entries = opendirSync(dir)
  } catch {
    return false
  }
  try {
    for (let entry = entries.readSync(); entry !== null; entry = entries.readSync()) {
      if (entry.name.endsWith('.jsonl')) return true
    }
    return false
  } catch {
    return false
  } finally {
    entries.closeSync()
  }
}

export function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir).sort()
  } catch {
    return []
  }
}

export function sizeOf(file: string): number {
  try {
    return statSync(file).size
  } catch {
    return 0
  }
}

export function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}
