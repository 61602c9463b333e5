/**
 * `index`: builds or refreshes the on-disk index, past the per-call work
 * budgets, with progress from the addon (sessions and bytes planned and
 * built): a bar on a terminal, plain lines otherwise, nothing with `--quiet`.
 */
import type { IndexProgress, SessionsArgs } from 'pi-fabric-memory/native'
import { option } from './args.mjs'
import type { Command } from './command.mjs'
import { openMemory, requireSessions, type Context } from './context.mjs'
import { printJson } from './output.mjs'
import { bytes } from '../present/text.mjs'
import { coverageText } from '../present/history.mjs'
import { emptyScopeHint, pageFailure } from './history.mjs'
import { indexUntilCurrent, progressLine, type Done } from '../recall/indexing.mjs'

export interface ProgressView {
  update(progress: IndexProgress, before: Done): void
  done(): void
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
  const { page, built } = await indexUntilCurrent(memory, args, { onProgress: (p, before) => view.update(p, before) })
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
