/**
 * `index`: builds or refreshes the on-disk index, past the per-call work
 * budgets, with progress from the addon (sessions and bytes planned and
 * built): a bar on a terminal, plain lines otherwise, nothing with `--quiet`.
 */
import type { IndexProgress, MemoryCoverage, SessionsArgs } from 'pi-fabric-memory/native'
import { option } from './cli-args.mjs'
import type { Command } from './cli-command.mjs'
import { openMemory, requireSessions, type Context } from './cli-context.mjs'
import { bytes, printJson } from './cli-output.mjs'
import { coverageText, emptyScopeHint, pageFailure } from './cli-history.mjs'

/** Work done by the calls before the current one. */
interface Done {
  sessions: number
  bytes: number
}

export interface ProgressView {
  update(progress: IndexProgress, before: Done): void
  done(): void
}

const seconds = (s: number) => (s >= 90 ? `${Math.round(s / 60)}m` : `${Math.max(1, Math.round(s))}s`)

/** One progress line: sessions current of eligible, bytes parsed of planned, rate and ETA. */
export function progressLine(p: IndexProgress, before: Done, elapsedMs: number, width: number): string {
  const current = p.freshSessions + p.sessionsIndexed
  const parsed = before.bytes + p.bytesIndexed
  const rate = elapsedMs > 0 ? parsed / (elapsedMs / 1000) : 0
  const remaining = p.bytesToIndex - p.bytesIndexed
  // The plan covers every stale session unless a budget cut it: then only sessions can estimate.
  const planned = p.sessionsToIndex === p.eligibleSessions - p.freshSessions
  const perSession = before.sessions + p.sessionsIndexed > 0 ? elapsedMs / 1000 / (before.sessions + p.sessionsIndexed) : 0
  const eta = planned ? (rate > 0 ? remaining / rate : undefined) : perSession * (p.eligibleSessions - current)
  const stats = [
    `${current}/${p.eligibleSessions} sessions`,
    `${bytes(parsed)}/${bytes(before.bytes + p.bytesToIndex)}`,
    rate > 0 ? `${bytes(rate)}/s` : undefined,
    eta !== undefined && current < p.eligibleSessions ? `ETA ${seconds(eta)}` : undefined,
  ].filter(Boolean)
  const text = stats.join(' · ')
  // Fixed per terminal width (not per line), so the bar does not jitter as the numbers grow.
  const barWidth = Math.max(10, Math.min(30, width - 62))
  const filled = p.eligibleSessions ? Math.round((current / p.eligibleSessions) * barWidth) : barWidth
  return width > 0 ? `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}] ${text}` : `indexing: ${text}`
}

/** A bar redrawn in place (at most every 100 ms) on a terminal; a line per second otherwise. */
export function progressView(ctx: Context, stream: NodeJS.WriteStream = process.stderr): ProgressView {
  if (ctx.quiet) return { update() {}, done() {} }
  const started = Date.now()
  const tty = stream.isTTY === true
  const interval = tty ? 100 : 1000
  let drawn = 0
  let lastLength = 0
  let latest: [IndexProgress, Done] | undefined
  const draw = () => {
    if (!latest) return
    const line = progressLine(latest[0], latest[1], Date.now() - started, tty ? (stream.columns || 80) - 1 : 0)
    // Padding instead of an erase sequence: the output holds no escape codes.
    if (tty) stream.write(`\r${line}${' '.repeat(Math.max(0, lastLength - line.length))}`)
    else stream.write(`${line}\n`)
    lastLength = line.length
    drawn = Date.now()
  }
  return {
    update(progress, before) {
      if (progress.sessionsToIndex === 0) return
      const first = latest === undefined
      latest = [progress, before]
      if (first || Date.now() - drawn >= interval) draw()
    },
    done() {
      if (!latest) return
      const [p, before] = latest
      latest = [{ ...p, sessionsIndexed: p.sessionsToIndex, bytesIndexed: p.bytesToIndex }, before]
      if (tty) {
        draw()
        stream.write('\n')
      }
    },
  }
}

const budgetOnly = (c: MemoryCoverage) => c.reasons.length > 0 && c.reasons.every((r) => r === 'max_sync_sessions' || r === 'max_sync_source_bytes')

async function index(ctx: Context): Promise<void> {
  requireSessions(ctx)
  const memory = openMemory(ctx)
  const args: SessionsArgs = {
    scope: (option(ctx.parsed, 'scope') ?? 'global') as SessionsArgs['scope'],
    branches: ctx.parsed.options.has('branches-all') ? 'all' : 'active',
    limit: 1,
  }
  const view = progressView(ctx)
  const started = Date.now()
  const built: Done = { sessions: 0, bytes: 0 }
  let page
  let indexedBefore = -1
  // A budget ends one call, not the command: continue while every call makes progress.
  for (;;) {
    const before = { ...built }
    let plan: IndexProgress | undefined
    page = await memory.sessions(args, {
      onProgress: (p) => {
        if (p.sessionsIndexed === 0) plan = p
        view.update(p, before)
      },
    })
    // Reports are queued on the event loop: let the ones already sent arrive.
    await new Promise((resolve) => setImmediate(resolve))
    built.sessions += plan?.sessionsToIndex ?? 0
    built.bytes += plan?.bytesToIndex ?? 0
    const c = page.coverage
    if (page.error || !budgetOnly(c) || c.indexedSessions <= indexedBefore) break
    indexedBefore = c.indexedSessions
  }
  view.done()
  const elapsedMs = Date.now() - started
  if (page.error) throw pageFailure(page.error)
  const c = page.coverage
  if (ctx.json) return printJson({ scope: page.scope, branches: page.branches, indexDir: memory.indexDir, built, elapsedMs, coverage: c })
  if (c.eligibleSessions === 0) return console.log(emptyScopeHint(ctx, page.scope))
  console.log(
    `indexed ${c.indexedSessions} of ${c.eligibleSessions} sessions in ${elapsedMs} ms · ${built.sessions} built from ${bytes(built.bytes)} · coverage ${coverageText(c)}`,
  )
}

export const INDEX_COMMAND: Command = {
  name: 'index',
  summary: 'build or refresh the on-disk index, with a progress bar',
  usage: 'index [options]',
  flags: ['scope', 'branches-all', 'quiet', 'json'],
  examples: ['index', 'index --scope project --quiet', 'index --json'],
  flagHelp: { scope: 'global (default: every session of the agent dir), project, session or session:<id, id prefix or path>' },
  details: 'Budgets (memory.maxSyncSessions, maxSyncSourceBytes) bound each call; index keeps calling until every\nsession in scope is current.',
  run: index,
}
