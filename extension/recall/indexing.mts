/**
 * Indexing past the per-call work budgets: budgeted `sessions` calls repeated
 * while each makes progress (the CLI's `index`, the extension's background
 * warm-up), and that progress as one line (the CLI's bar, a recall's view in Pi).
 */
import type { IndexProgress, MemoryCoverage, SessionsArgs, SessionsPage } from 'pi-fabric-memory/native'
import { bytes } from '../present/text.mjs'
import type { Memory } from './create-memory.mjs'

/** Work done by the calls before the current one. */
export interface Done {
  sessions: number
  bytes: number
}

export const NOTHING_DONE: Done = Object.freeze({ sessions: 0, bytes: 0 })

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

const budgetOnly = (c: MemoryCoverage) => c.reasons.length > 0 && c.reasons.every((r) => r === 'max_sync_sessions' || r === 'max_sync_source_bytes')

export interface IndexLoopOptions {
  /** Every report of every call, with the work of the calls before it. */
  onProgress?: (progress: IndexProgress, before: Done) => void
  /** Asked before each further call (the one before has finished); false stops the loop there. */
  proceed?: () => boolean | Promise<boolean>
}

export interface IndexLoopResult {
  /** The last call's page: its coverage is the scope's as the loop left it. */
  page: SessionsPage
  /** Sessions built and source bytes parsed, over all calls. */
  built: Done
  calls: number
}

/**
 * Calls `memory.sessions(args)` until the scope is current: a spent budget
 * ends one call, not the loop, which continues while every call makes progress.
 */
export async function indexUntilCurrent(memory: Pick<Memory, 'sessions'>, args: SessionsArgs, options: IndexLoopOptions = {}): Promise<IndexLoopResult> {
  const built: Done = { sessions: 0, bytes: 0 }
  let indexedBefore = -1
  for (let calls = 1; ; calls++) {
    const before = { ...built }
    let plan: IndexProgress | undefined
    const page = await memory.sessions(args, {
      onProgress: (p) => {
        if (p.sessionsIndexed === 0) plan = p
        options.onProgress?.(p, before)
      },
    })
    // Reports are queued on the event loop: let the ones already sent arrive.
    await new Promise((resolve) => setImmediate(resolve))
    built.sessions += plan?.sessionsToIndex ?? 0
    built.bytes += plan?.bytesToIndex ?? 0
    const c = page.coverage
    if (page.error || !budgetOnly(c) || c.indexedSessions <= indexedBefore) return { page, built, calls }
    indexedBefore = c.indexedSessions
    if (options.proceed && !(await options.proceed())) return { page, built, calls }
  }
}
