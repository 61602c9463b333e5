/**
 * `doctor`: where the CLI (and the extension, with the same settings) looks,
 * what it finds there, and the settings in effect with the file each came
 * from. It reads the index with the smallest budgets (at most one session of
 * ≤ 1 KiB is built), so a large history is not indexed by asking; a problem
 * exits 1.
 */
import { accessSync, constants, existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { ForgottenSession, MemoryCoverage, MemoryFileStatus, MemoryStore } from 'pi-fabric-memory/native'
import type { Command } from './command.mjs'
import { headerCwd, isDir, memoryConfig, openMemory, openStore, safeReaddir, sessionFiles, sessionsDir, sizeOf, type Context } from './context.mjs'
import { coverageText } from '../present/history.mjs'
import { forgottenText } from '../present/forgotten.mjs'
import { bold, dim, EXIT, green, printJson, red, yellow } from './output.mjs'
import { bytes, plural } from '../present/text.mjs'
import { curatedLayers, curatedSettings } from '../curated/settings.mjs'
import { dreamingSettings } from '../dreaming/index.mjs'
import { guarded } from '../shared/errors.mjs'
import { memoryLayers, type SettingsLayer } from '../shared/settings.mjs'

export interface Finding {
  code: string
  message: string
}

export interface SettingRow {
  key: string
  value: unknown
  /** The settings file that set it, or `"default"`. */
  source: string
}

export interface DoctorReport {
  ok: boolean
  agentDir: { path: string; origin: string; exists: boolean }
  sessionsDir: { path: string; sessions: number; bytes: number; projects: Array<{ dir: string; cwd: string | null; sessions: number; bytes: number }> }
  /** `tempFiles`: temp files of index writes that were interrupted (a killed process); removed after 10 minutes. */
  indexDir: { path: string; exists: boolean; records: number; tempFiles: number; bytes: number } | null
  coverage: MemoryCoverage | null
  memoryDir: { path: string; memory: MemoryFileStatus; user: MemoryFileStatus } | null
  /** The sessions recall never surfaces (`forget`); empty when none. */
  forgotten: ForgottenSession[]
  settings: SettingRow[]
  projectSettings: { file: string; read: boolean }
  problems: Finding[]
  warnings: Finding[]
}

/** The file of the last layer that sets `key`, else "default". */
function sourceOf(layers: SettingsLayer[], key: string): string {
  return [...layers].reverse().find((layer) => layer.values[key] !== undefined)?.file ?? 'default'
}

function rows(prefix: string, values: Record<string, unknown>, layers: SettingsLayer[]): SettingRow[] {
  return Object.entries(values).map(([key, value]) => ({ key: `${prefix}.${key}`, value, source: sourceOf(layers, key) }))
}

/** Whether `path` (or, before it exists, its nearest existing parent) can be written. */
function writable(path: string): boolean {
  for (let dir = path; ; dir = dirname(dir)) {
    if (existsSync(dir)) {
      try {
        accessSync(dir, constants.W_OK)
        return true
      } catch {
        return false
      }
    }
    if (dirname(dir) === dir) return false
  }
}

function indexDirStats(path: string): DoctorReport['indexDir'] {
  const names = safeReaddir(path)
  const records = names.filter((name) => /\.(hot|cold)$/.test(name))
  // `<name>.tmp.<pid>.<n>`, as the index's atomic writer names them (src/index/record.rs).
  const tempFiles = names.filter((name) => /\.tmp\.\d+\.\d+$/.test(name)).length
  const bytes = names.reduce((sum, name) => sum + sizeOf(join(path, name)), 0)
  return { path, exists: isDir(path), records: records.length, tempFiles, bytes }
}

/** Recall's side: the coverage of every session as it stands (see the module comment). */
async function recallSide(ctx: Context, report: DoctorReport): Promise<void> {
  const layers = memoryLayers(ctx.agentDir, ctx.cwd, ctx.trusted)
  let memory
  try {
    memory = openMemory(ctx)
  } catch (error) {
    return void report.problems.push({ code: 'invalid_settings', message: (error as Error).message })
  }
  report.settings.push(...rows('memory', memory.config, layers))
  if (memory.config.enabled === false) {
    report.warnings.push({ code: 'recall_disabled', message: `memory.enabled is false (${sourceOf(layers, 'enabled')}): Pi gets no recall tools; this CLI still works` })
  }
  report.indexDir = indexDirStats(memory.indexDir)
  const forgotten = await memory.forgotten()
  report.forgotten = forgotten.forgotten
  if (forgotten.error) report.problems.push({ code: forgotten.error.code, message: forgotten.error.message })
  if (report.sessionsDir.sessions === 0) return
  const probe = openMemory(ctx, { ...memoryConfig(ctx), maxSyncSessions: 1, maxSyncSourceBytes: 1024 })
  const { coverage } = await probe.sessions({ scope: 'global', limit: 1 })
  // The probe's own budgets are not the user's: report stale sessions as such instead.
  const reasons = coverage.reasons.filter((r) => r !== 'max_sync_sessions' && r !== 'max_sync_source_bytes')
  report.coverage = { ...coverage, reasons }
  if (coverage.error) report.problems.push({ code: coverage.error.code, message: coverage.error.message })
  if (coverage.staleSessions > 0) {
    report.warnings.push({ code: 'not_indexed', message: `${plural(coverage.staleSessions, 'session')} not indexed yet: run "pi-fabric-memory index" (recall would index them first)` })
  }
  if (!writable(memory.indexDir)) report.problems.push({ code: 'index_unwritable', message: `the index dir ${memory.indexDir} cannot be written: every call re-reads the sessions` })
  if (reasons.length) report.warnings.push({ code: 'coverage_incomplete', message: `answers are not authoritative: ${reasons.join(', ')} (README, Coverage)` })
}

/** Curated memory's side: the store the pi-memory settings describe and both files' status. */
async function curatedSide(ctx: Context, report: DoctorReport): Promise<void> {
  const layers = curatedLayers(ctx.cwd, ctx.trusted)
  let store: MemoryStore
  try {
    store = openStore(ctx)
  } catch (error) {
    return void report.problems.push({ code: 'invalid_settings', message: (error as Error).message })
  }
  const settings = curatedSettings(ctx.cwd, ctx.trusted)
  const values = { dataDir: store.dir, memoryCharLimit: store.memoryCharLimit, userCharLimit: store.userCharLimit, dreaming: dreamingSettings(settings.dreaming) }
  report.settings.push(...rows('pi-memory', values, layers))
  const status = await guarded(() => store.status())
  report.memoryDir = { path: store.dir, ...status }
  for (const file of [status.memory, status.user]) {
    if (file.error) report.problems.push({ code: 'memory_unreadable', message: `${file.file}: ${file.error}` })
  }
}

export async function diagnose(ctx: Context): Promise<DoctorReport> {
  const projects = sessionFiles(ctx).map((p) => ({ ...p, cwd: headerCwd(join(p.dir, safeReaddir(p.dir).find((f) => f.endsWith('.jsonl'))!)) ?? null }))
  const report: DoctorReport = {
    ok: true,
    agentDir: { path: ctx.agentDir, origin: ctx.agentDirOrigin, exists: isDir(ctx.agentDir) },
    sessionsDir: {
      path: sessionsDir(ctx),
      sessions: projects.reduce((sum, p) => sum + p.sessions, 0),
      bytes: projects.reduce((sum, p) => sum + p.bytes, 0),
      projects: projects.sort((a, b) => b.sessions - a.sessions),
    },
    indexDir: null,
    coverage: null,
    memoryDir: null,
    forgotten: [],
    settings: [],
    projectSettings: { file: join(ctx.cwd, '.pi', 'settings.json'), read: ctx.trusted },
    problems: [],
    warnings: [],
  }
  if (!report.agentDir.exists) report.problems.push({ code: 'no_agent_dir', message: `the agent dir ${ctx.agentDir} does not exist; set --agent-dir or PI_CODING_AGENT_DIR` })
  else if (report.sessionsDir.sessions === 0) report.problems.push({ code: 'no_sessions', message: `no Pi sessions under ${report.sessionsDir.path}; set --agent-dir or PI_CODING_AGENT_DIR` })
  await recallSide(ctx, report)
  await curatedSide(ctx, report)
  report.ok = report.problems.length === 0
  return report
}

const ORIGIN = { flag: '--agent-dir', env: 'PI_CODING_AGENT_DIR', default: 'default' } as Record<string, string>

function printReport(r: DoctorReport): void {
  const label = (s: string) => bold(s.padEnd(13))
  console.log(`${label('agent dir')}${r.agentDir.path} ${dim(`(${ORIGIN[r.agentDir.origin]})`)}${r.agentDir.exists ? '' : red(' missing')}`)
  const s = r.sessionsDir
  console.log(`${label('sessions')}${s.path}: ${plural(s.sessions, 'session')} (${bytes(s.bytes)}) in ${plural(s.projects.length, 'project')}`)
  for (const p of s.projects) console.log(`  ${String(p.sessions).padStart(5)}  ${p.cwd ?? p.dir} ${dim(`(${bytes(p.bytes)})`)}`)
  if (r.indexDir) {
    const temps = r.indexDir.tempFiles > 0 ? `, ${plural(r.indexDir.tempFiles, 'temp file')} of interrupted writes (removed after 10 minutes)` : ''
    console.log(`${label('index dir')}${r.indexDir.path}: ${r.indexDir.exists ? `${plural(r.indexDir.records, 'record')}, ${bytes(r.indexDir.bytes)}${temps}` : 'not built yet'}`)
  }
  if (r.coverage) {
    const c = r.coverage
    console.log(`${label('index')}${c.indexedSessions} of ${c.eligibleSessions} sessions indexed · ${c.staleSessions} stale · coverage ${coverageText(c)}`)
  }
  if (r.forgotten.length) console.log(`${label('forgotten')}${forgottenText(r.forgotten).split('\n').join('\n  ')}`)
  if (r.memoryDir) {
    const line = (f: MemoryFileStatus) => (f.error ? red(`unreadable — ${f.error}`) : `${plural(f.entryCount, 'entry')} (${f.usage})`)
    console.log(`${label('memory dir')}${r.memoryDir.path}: MEMORY.md ${line(r.memoryDir.memory)}; USER.md ${line(r.memoryDir.user)}`)
  }
  console.log(bold('settings'))
  const width = Math.max(0, ...r.settings.map((row) => row.key.length))
  for (const row of r.settings) console.log(`  ${row.key.padEnd(width)}  ${JSON.stringify(row.value)} ${dim(`(${row.source})`)}`)
  console.log(dim(`  project settings ${r.projectSettings.file}: ${r.projectSettings.read ? 'read (--trust-project)' : 'not read (Pi reads them only for trusted projects; --trust-project)'}`))
  for (const w of r.warnings) console.log(`${yellow('warning')} ${w.message}`)
  for (const p of r.problems) console.log(`${red('problem')} ${p.message}`)
  console.log(r.ok ? green('ok') : red(plural(r.problems.length, 'problem')))
}

async function doctor(ctx: Context): Promise<void> {
  const report = await diagnose(ctx)
  if (ctx.json) printJson(report)
  else printReport(report)
  if (!report.ok) process.exitCode = EXIT.failure
}

export const DOCTOR_COMMAND: Command = {
  name: 'doctor',
  summary: 'where memory looks, what it finds, the settings in effect; exit 1 on a problem',
  usage: 'doctor [options]',
  details: 'Problems (exit 1): no agent dir, no sessions, invalid settings, an unreadable memory file, an index dir\nthat cannot be written. Warnings (exit 0): sessions not indexed yet, incomplete coverage.',
  flags: ['json'],
  examples: ['doctor', 'doctor --agent-dir /srv/pi/agent --json', 'doctor --cwd ~/src/app --trust-project'],
  run: doctor,
}
