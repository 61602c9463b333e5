/** One dream: lock, state, gates, transcripts, model, run, landing. */

import { MemoryStore, projectIdentity, sessionHeader } from '../native.mjs'
import type { Memory } from '../recall/create-memory.mjs'
import { verifyEvidence } from './evidence.mjs'
import { describeLanding, land, StagedStore } from './staging.mjs'
import { acquireLock } from './lock.mjs'
import type { ModelRegistryLike } from './model.mjs'
import { resolveModel } from './model.mjs'
import { composeUserPrompt, type UserPrompt } from './prompt.mjs'
import { gatherTurns, type Turn } from './gather.mjs'
import { runConsolidation, type RunUsage } from './run.mjs'
import type { DreamingSettings } from './settings.mjs'
import { readState, timeGate, writeState } from './state.mjs'

export type DreamStatus = 'disabled' | 'locked' | 'not_due' | 'aborted' | 'no_model' | 'failed' | 'done'

export interface DreamOutcome {
  status: DreamStatus
  message: string
  /** New turns found since the last run (the turn gate counts these). */
  turns?: number
  /** What the model was given: the newest turns that fit the transcript budget. */
  read?: TranscriptRead
  writes?: string[]
  summary?: string
  /** Changes written by this run. */
  applied?: number
  /** Changes staged for `/memory review`. */
  proposed?: number
  /** Candidates dropped because their evidence did not verify. */
  dropped?: number
  usage?: RunUsage
  /** The bound that stopped the run (nothing applied). */
  stopped?: string
}

export interface TranscriptRead {
  turns: number
  sessions: number
  chars: number
}

const readOf = (prompt: UserPrompt): TranscriptRead => ({
  turns: prompt.turns.length,
  sessions: new Set(prompt.turns.map((t) => t.sessionId)).size,
  chars: prompt.chars,
})

/** "Dreaming read 4 of 876 new turn(s) from 2 session(s) (7,950 characters)": what the model saw, not what was found. */
export function describeRead(read: TranscriptRead, found: number): string {
  const of = read.turns < found ? `${read.turns} of ${found}` : `${read.turns}`
  return `Dreaming read ${of} new turn(s) from ${read.sessions} session(s) (${read.chars.toLocaleString('en-US')} characters)`
}

export interface DreamOptions {
  store: MemoryStore
  settings: DreamingSettings
  /** Transcripts are read with `sessions`/`walk`; `expand` verifies evidence (without it every write is dropped) and, with `pack`, serves the agent's evidence tools. */
  memory: Pick<Memory, 'sessions' | 'walk'> & Partial<Pick<Memory, 'expand' | 'pack'>>
  registry: ModelRegistryLike | undefined
  /** The session's current model (`ctx.model`): used unless `settings.model` is set. */
  currentModel?: unknown
  /** Pi's own pi-agent-core module, see {@link runConsolidation}. */
  agentCore?: unknown
  includeGlobal: boolean
  sessionDir?: string
  signal?: AbortSignal
  /** `/memory dream`: ignore the time gate (the lock and the turn gate's minimum of one turn still apply). */
  force?: boolean
  now?: () => number
  /** Test seam: replaces {@link runConsolidation}. */
  consolidate?: typeof runConsolidation
  /** The `memory.projectKey` setting, for telling which sessions are the store's project's. */
  projectKey?: string
}

/**
 * The turns' sessions that belong to the store's project (their header's cwd
 * resolves to its key), by id and by file: a project-scope write may cite only
 * those. `undefined` when the store has no project.
 */
export function projectSessionsOf(store: Pick<MemoryStore, 'project'>, turns: Turn[], projectKey?: string): Set<string> | undefined {
  const project = store.project
  if (!project) return undefined
  const keys = new Map<string, string | undefined>()
  const keyOf = (cwd: string) => {
    if (!keys.has(cwd)) {
      try {
        keys.set(cwd, projectIdentity(cwd, projectKey ? { projectKey } : {}).key)
      } catch {
        keys.set(cwd, undefined)
      }
    }
    return keys.get(cwd)
  }
  const ids = new Set<string>()
  for (const turn of turns) {
    const cwd = turn.file ? sessionHeader(turn.file)?.cwd : undefined
    if (cwd && keyOf(cwd) === project.key) ids.add(turn.sessionId).add(turn.file!)
  }
  return ids
}

/** Runs the gates and, when due, one consolidation. Never throws for expected outcomes. */
export async function dream(options: DreamOptions): Promise<DreamOutcome> {
  const now = options.now ?? Date.now
  const { settings, store } = options
  if (!settings.enabled && !options.force) return { status: 'disabled', message: 'Dreaming is off (pi-memory.dreaming.enabled is not true).' }
  if (options.signal?.aborted) return { status: 'aborted', message: 'Dreaming aborted: the session ended.' }
  const lock = acquireLock(store.dir)
  if (!lock) return { status: 'locked', message: 'Another Pi host is dreaming; skipped.' }
  try {
    const startedAt = now()
    const state = readState(store.dir)
    const gate = timeGate(state, settings, startedAt)
    if (!gate.open && !options.force) {
      return { status: 'not_due', message: `Not due: next run after ${new Date(gate.nextAt!).toISOString()}.` }
    }
    const since = state.lastConsolidatedAt ? Date.parse(state.lastConsolidatedAt) : undefined
    const turns = await gatherTurns(options.memory, { includeGlobal: options.includeGlobal, sessionDir: options.sessionDir, since, signal: options.signal })
    if (options.signal?.aborted) return { status: 'aborted', message: 'Dreaming aborted: the session ended.' }
    const needed = options.force ? 1 : settings.minTurnsSinceLastRun
    if (turns.length < needed) {
      return { status: 'not_due', message: `Not due: ${turns.length} new turn(s) since the last run, ${needed} needed.`, turns: turns.length }
    }
    const resolved = await resolveModel(options.registry, settings, options.currentModel)
    if (typeof resolved === 'string') return { status: 'no_model', message: `Dreaming skipped: ${resolved}; it will retry at the next session start.` }
    const projectSessions = projectSessionsOf(store, turns, options.projectKey)
    const prompt = composeUserPrompt(turns, undefined, projectSessions)
    const read = readOf(prompt)
    const project = store.project ? { project: { key: store.project.key, name: store.project.name } } : {}
    const agentStore = new MemoryStore({ dir: store.dir, memoryCharLimit: store.memoryCharLimit, userCharLimit: store.userCharLimit, ...project })
    await agentStore.loadFromDisk()
    const expand = options.memory.expand
    const staged = new StagedStore(
      agentStore,
      (claim, evidence) =>
        expand ? verifyEvidence(expand, claim, evidence) : Promise.resolve({ ok: false as const, reason: 'evidence cannot be checked here (no memory.expand)' }),
      projectSessions,
    )
    const { pack } = options.memory
    const result = await (options.consolidate ?? runConsolidation)({
      registry: options.registry!,
      ...resolved,
      store: staged,
      ...(expand && pack ? { memory: { expand, pack } } : {}),
      prompt: prompt.text,
      signal: options.signal,
      maxOutputTokens: settings.maxOutputTokens,
      maxCost: settings.maxCost,
      agentCore: options.agentCore,
    })
    const spent = result.usage ? `; output ${result.usage.outputTokens} tokens${result.usage.cost !== undefined ? `, cost ${result.usage.cost.toFixed(4)}` : ''}` : ''
    if (result.aborted || options.signal?.aborted) return { status: 'aborted', message: 'Dreaming aborted: the session ended; nothing applied, state unchanged.', writes: result.writes, usage: result.usage }
    if (!result.ok) return { status: 'failed', message: `Dreaming failed: ${result.error ?? 'unknown error'}; nothing applied, state unchanged${spent}.`, writes: result.writes, usage: result.usage }
    const dropped = staged.dropped.length
    // Spent budget is not spent again at the next session start: the state advances even when a bound stopped the run.
    writeState(store.dir, { lastConsolidatedAt: new Date(startedAt).toISOString(), lastTurnCount: read.turns, lastDropped: dropped })
    const changed = result.writes.length ? `${result.writes.length} change(s): ${result.writes.join(', ')}` : 'no changes'
    if (result.stopped) {
      const droppedNote = dropped ? `; ${dropped} candidate(s) dropped: their evidence did not verify` : ''
      const message = `${describeRead(read, turns.length)}: ${changed}; stopped at ${result.stopped}, so nothing was applied${droppedNote}${spent}.`
      return { status: 'done', message, turns: turns.length, read, writes: result.writes, summary: result.summary, applied: 0, proposed: 0, dropped, usage: result.usage, stopped: result.stopped }
    }
    const landing = await land(store, staged.staged, settings.autoApply, dropped)
    const message = `${describeRead(read, turns.length)}: ${changed}; ${describeLanding(landing, settings.autoApply)}${spent}.`
    return { status: 'done', message, turns: turns.length, read, writes: result.writes, summary: result.summary, applied: landing.applied, proposed: landing.proposed, dropped, usage: result.usage }
  } finally {
    lock.release()
  }
}
