/**
 * The background warm-up, and what a tool call that indexes shows meanwhile.
 *
 * Nothing is indexed before the first call, so a first recall over a large
 * history waited for every session to be parsed with nothing on screen. From
 * Pi's `session_start` the extension now indexes in the background: this
 * project's sessions, then every project's (recall's default scope first). It
 * starts after Pi's startup, in small budgeted calls with a pause between them,
 * so a recall issued meanwhile waits for at most one of them (syncs on one
 * index dir take turns in the process; other Pi processes share the on-disk
 * records). `stop()` (at `session_shutdown`) issues no further call; one in
 * flight finishes.
 */
import type { IndexProgress } from 'pi-fabric-memory/native'
import { indexUntilCurrent, NOTHING_DONE, progressLine, type Done } from './indexing.mjs'
import type { Memory } from './create-memory.mjs'

/**
 * Sessions one warm-up call may build (fewer when `memory.maxSyncSessions` says
 * so): a recall waits for at most one such call. On `medium` (0.3 MB a session)
 * 20 take ~0.2–0.4 s on a busy 2-core machine, and the 50 calls of a full build
 * cost no more than one unbounded call. The global scope's last call also
 * builds the cold term dictionary (~5 s there), under the same lock.
 */
export const WARM_UP_SESSIONS_PER_CALL = 20
/** After Pi's startup. */
export const WARM_UP_DELAY_MS = 1000
/** Between calls: the pool's threads go back to Pi and to a waiting recall. */
export const WARM_UP_PAUSE_MS = 100
/** The scopes warmed, in order: what recall's default scope reads, then the rest. */
export const WARM_UP_SCOPES = ['project', 'global'] as const

/** One report of the call in flight, with the warm-up's earlier calls of that scope. */
export interface WarmUpReport {
  scope: (typeof WARM_UP_SCOPES)[number]
  progress: IndexProgress
  before: Done
  /** When that scope's first call started (for the rate). */
  startedAt: number
}

export type WarmUpOutcome =
  | { status: 'done' | 'stopped'; built: Done; calls: number }
  | { status: 'failed'; message: string; built: Done; calls: number }

export interface WarmUp {
  /** The latest report, while a call is in flight. */
  current(): WarmUpReport | undefined
  /** Every further report; returns the unsubscribe. */
  subscribe(listener: (report: WarmUpReport) => void): () => void
  /** No further call (one in flight finishes); idempotent. */
  stop(): void
  /** Settles when the warm-up has ended; never rejects. */
  readonly finished: Promise<WarmUpOutcome>
}

/**
 * Whether the `memory` settings ask for a warm-up (`enabled` and `warmUp`, both
 * on by default). Any `warmUp` but `true` turns it off: a user who wrote
 * `"false"` meant no background work.
 */
export const warmUpWanted = (config: Record<string, unknown>) => config.enabled !== false && (config.warmUp === undefined || config.warmUp === true)

/** The settings of the warm-up's engine: the user's, with the per-call session budget at most {@link WARM_UP_SESSIONS_PER_CALL}. */
export function warmUpConfig(config: Record<string, unknown>): Record<string, unknown> {
  const budget = config.maxSyncSessions
  // A malformed budget stays as it is, so the engine refuses it as it refuses the tools'.
  return { ...config, maxSyncSessions: typeof budget === 'number' ? Math.min(budget, WARM_UP_SESSIONS_PER_CALL) : (budget ?? WARM_UP_SESSIONS_PER_CALL) }
}

export function startWarmUp(memory: Pick<Memory, 'sessions'>, { delayMs = WARM_UP_DELAY_MS, pauseMs = WARM_UP_PAUSE_MS } = {}): WarmUp {
  let stopped = false
  let latest: WarmUpReport | undefined
  let wake: (() => void) | undefined
  const listeners = new Set<(report: WarmUpReport) => void>()
  const built: Done = { sessions: 0, bytes: 0 }
  let calls = 0
  // Unref'd, and cut short by stop(): a pending warm-up never keeps Pi alive.
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined
        resolve()
      }, ms)
      timer.unref?.()
      wake = () => {
        clearTimeout(timer)
        wake = undefined
        resolve()
      }
    })
  const run = async (): Promise<WarmUpOutcome> => {
    await sleep(delayMs)
    for (const scope of WARM_UP_SCOPES) {
      if (stopped) break
      const startedAt = Date.now()
      const result = await indexUntilCurrent(memory, { scope, limit: 1 }, {
        onProgress: (progress, before) => {
          if (progress.sessionsToIndex === 0) return
          latest = { scope, progress, before, startedAt }
          for (const listener of listeners) listener(latest)
        },
        proceed: async () => {
          latest = undefined
          await sleep(pauseMs)
          return !stopped
        },
      })
      latest = undefined
      calls += result.calls
      built.sessions += result.built.sessions
      built.bytes += result.built.bytes
      if (result.page.error) return { status: 'failed', message: `${result.page.error.code}: ${result.page.error.message}`, built, calls }
    }
    return { status: stopped ? 'stopped' : 'done', built, calls }
  }
  const finished = run().catch((error: unknown): WarmUpOutcome => ({ status: 'failed', message: error instanceof Error ? error.message : String(error), built, calls }))
  void finished.then(() => {
    latest = undefined
    listeners.clear()
  })
  return {
    current: () => latest,
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    stop() {
      stopped = true
      wake?.()
    },
    finished,
  }
}

/** A partial tool result (Pi's `onUpdate`): the line for people, the numbers as `details.indexing`. */
export interface IndexingUpdate {
  content: [{ type: 'text'; text: string }]
  details: { indexing: IndexProgress & { before: Done } }
}

/** Updates at most this often (but for a plan's last report): a report comes per session built. */
export const UPDATE_INTERVAL_MS = 200

/**
 * The indexing a tool call waits on, as Pi tool updates: the running warm-up's
 * (the call's sync waits for its call in flight) until the call's own sync
 * plans work, then the call's own. The first update goes out at once, and so
 * does the one that completes a plan.
 */
export function indexingUpdates(onUpdate: (update: IndexingUpdate) => void, warmUp?: Pick<WarmUp, 'current' | 'subscribe'>, intervalMs = UPDATE_INTERVAL_MS) {
  let shown = -Infinity
  let ownSince: number | undefined
  let over = false
  const show = (progress: IndexProgress, before: Done, startedAt: number) => {
    const now = Date.now()
    // The report that completes a plan always goes out: what follows it (a global call's term dictionary) may take seconds.
    const last = progress.sessionsIndexed === progress.sessionsToIndex
    if (over || (now - shown < intervalMs && !last)) return
    shown = now
    const text = progressLine(progress, before, now - startedAt, 0)
    onUpdate({ content: [{ type: 'text', text }], details: { indexing: { ...progress, before } } })
  }
  const fromWarmUp = (report: WarmUpReport) => {
    if (ownSince === undefined) show(report.progress, report.before, report.startedAt)
  }
  const unsubscribe = warmUp?.subscribe(fromWarmUp)
  const running = warmUp?.current()
  if (running) fromWarmUp(running)
  return {
    /** The call's own reports (its `onProgress`). */
    onProgress(progress: IndexProgress) {
      if (progress.sessionsToIndex === 0) return
      if (ownSince === undefined) {
        ownSince = Date.now()
        unsubscribe?.()
        shown = -Infinity
      }
      show(progress, NOTHING_DONE, ownSince)
    },
    /** The call is over: no further update. */
    stop() {
      over = true
      unsubscribe?.()
    },
  }
}
