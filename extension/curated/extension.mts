/**
 * The curated-memory lifecycle in Pi: the five memory tools, `/memory`, and
 * the frozen system-prompt snapshot.
 *
 * The snapshot is captured once per session and saved in it
 * (`pi.appendEntry`), so every agent run of the session sends the same
 * bytes (the provider's prefix cache stays warm) until a successful
 * compaction captures a new one. Resume and reload restore the snapshot saved
 * on the current branch after validating it again; a fork (new session id)
 * captures its own; `/tree` navigation selects the snapshot saved on the
 * branch it lands on. Tool writes change the files and the live state, never
 * the frozen snapshot.
 */
import type { ExtensionAPI, ExtensionContext } from '@earendil-works/pi-coding-agent'
import { MemoryStore } from '../native.mjs'
import { curatedProject, curatedSettings, storeOf, type CuratedSettings } from './settings.mjs'
import { citationReader } from './cited.mjs'
import { dream, dreamFooter, dreamingSettings, dreamingStatus, OPT_IN_FOOTER, readsEveryProject, type DreamingSettings, type DreamOutcome } from '../dreaming/index.mjs'
import { createMemory } from '../recall/create-memory.mjs'
import { agentDir, liveSessionDir, memorySettings } from '../shared/settings.mjs'
import { guarded } from '../shared/errors.mjs'
import { registerMemoryCommand } from './command.mjs'
import { plural } from '../present/text.mjs'
import { exposed, type ToolsSetting } from '../shared/exposure.mjs'
import { createMemoryTools, MEMORY_GUIDANCE, MEMORY_GUIDELINES } from './tools.mjs'
import { curatedRenderers } from '../tui/curated.mjs'
import type { TuiModule } from '../tui/pi-tui.mjs'

/** The Pi ≥ 1.0 prompt section (`<memory>…</memory>`) that holds the memory block. */
export const MEMORY_SECTION = 'memory'
/** `customType` of the session entries that hold saved snapshots. */
export const SNAPSHOT_ENTRY_TYPE = 'pi-fabric-memory.snapshot'
const STATUS_KEY = 'pi-memory'
const DREAM_STATUS_KEY = 'pi-memory-dreaming'
/** Event (on `pi.events`) carrying each dream's {@link DreamOutcome}. */
export const DREAM_EVENT = 'pi-fabric-memory:dream'

export interface SavedSnapshot {
  version: 1
  sessionId: string
  snapshot: string
}

export interface MemoryExtensionOptions extends CuratedSettings {
  /** A host-owned store (mode 2): settings files are not read for it. */
  store?: MemoryStore
  /** Pi's own `@earendil-works/pi-agent-core`, for dreaming; the package's Pi entry passes the running Pi's copy. */
  agentCore?: unknown
  /** Which tools are declared every turn (shared/exposure.mts); default `"essential"`. */
  tools?: ToolsSetting
  /** Pi's own `@earendil-works/pi-tui`, for the tools' TUI views (without it Pi shows the JSON text). */
  tui?: TuiModule
}

type SessionView = Pick<ExtensionContext['sessionManager'], 'getBranch' | 'getSessionId'>

/** The newest valid snapshot saved for this session on the current branch. */
export function savedSnapshot(store: MemoryStore, session: SessionView): string | undefined {
  const sessionId = session.getSessionId()
  const branch = session.getBranch() as ReadonlyArray<{ type: string; customType?: string; data?: unknown }>
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i]
    if (entry.type !== 'custom' || entry.customType !== SNAPSHOT_ENTRY_TYPE) continue
    const data = entry.data as Partial<SavedSnapshot> | undefined
    if (data?.sessionId !== sessionId) continue
    // An invalid newest snapshot is not replaced by an older one: the caller captures afresh.
    return typeof data.snapshot === 'string' && store.isValidSnapshot(data.snapshot) ? data.snapshot : undefined
  }
  return undefined
}

/** The memory block: the guidance (when `base` does not already list it), then the snapshot. */
export function memoryBlock(base: string, snapshot: string): string {
  const hasGuidance = MEMORY_GUIDELINES.every((line) => base.includes(line))
  return [hasGuidance ? '' : MEMORY_GUIDANCE, snapshot].filter(Boolean).join('\n\n')
}

/** The system prompt with the memory block appended (Pi 0.80). */
export function composePrompt(base: string, snapshot: string): string {
  const block = memoryBlock(base, snapshot)
  if (!block) return base
  return base ? `${base}\n\n${block}` : block
}

/**
 * Pi ≥ 1.0 prompt sections (`systemPromptOptions.sections`), or undefined on
 * 0.80. Pi diffs sections against what the model already has and sends one
 * patch when one changes, so the provider keeps its cached prefix; returning
 * a `systemPrompt` instead would force the whole prompt every run.
 */
function promptSections(event: unknown): Record<string, string> | undefined {
  const sections = (event as { systemPromptOptions?: { sections?: unknown } }).systemPromptOptions?.sections
  return sections && typeof sections === 'object' ? (sections as Record<string, string>) : undefined
}

const trustedOf = (ctx: ExtensionContext) => typeof ctx.isProjectTrusted === 'function' && ctx.isProjectTrusted() === true

/** The store of the settings, opened for the session's project when its cwd is in one (`warning`: why not, when it may be). */
function createStore(ctx: ExtensionContext, options: MemoryExtensionOptions): { store: MemoryStore; settings: CuratedSettings; warning?: string } {
  const settings = { ...curatedSettings(ctx.cwd, trustedOf(ctx)), ...definedOnly(options) }
  const { project, warning } = curatedProject(ctx.cwd, trustedOf(ctx))
  return { store: storeOf(settings, project), settings, warning }
}

function definedOnly(options: MemoryExtensionOptions): CuratedSettings {
  const { dataDir, memoryCharLimit, userCharLimit, dreaming } = options
  return Object.fromEntries(Object.entries({ dataDir, memoryCharLimit, userCharLimit, dreaming }).filter(([, v]) => v !== undefined))
}

/** The `memory.projectKey` setting in effect for the session (dreaming tells the project's sessions by it). */
function projectKeySetting(ctx: ExtensionContext): string | undefined {
  try {
    const key = memorySettings(agentDir(), ctx.cwd, trustedOf(ctx)).projectKey
    return typeof key === 'string' ? key : undefined
  } catch {
    return undefined
  }
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * Registers the memory tools, `/memory` and the snapshot lifecycle. Mode 1
 * (Pi auto-discovery) builds its store from the `pi-memory` settings at
 * `session_start`; mode 2 passes `{ store }`.
 */
export function memoryExtension(pi: ExtensionAPI, options: MemoryExtensionOptions = {}): void {
  const state: {
    store?: MemoryStore
    snapshot?: string
    dreaming?: DreamingSettings
    includeGlobal?: boolean
    abort?: AbortController
    /** Dreaming's proposals awaiting `/memory review`, as last counted. */
    toReview?: number
    /** The whole message of this process's last dream. */
    lastRun?: string
  } = {}
  const tui = options.tui
  const tools = createMemoryTools(() => state.store).map((tool) => (tui ? { ...tool, ...(curatedRenderers(tool.name, tui) as object) } : tool))
  for (const tool of tools) pi.registerTool(exposed(tool, options.tools ?? 'essential'))
  const curatedTools = new Set(tools.map((tool) => tool.name))

  /**
   * One dream over the current store; `force` is `/memory dream` (no time gate).
   * Runs of this process queue behind each other: a `/memory dream` typed while
   * the session-start check still holds the dreaming lock waits for it instead
   * of being told another host is dreaming.
   */
  let inFlight: Promise<unknown> = Promise.resolve()
  const runDream = (ctx: ExtensionContext, force: boolean): Promise<DreamOutcome> => {
    const next = inFlight.then(() => dreamOnce(ctx, force))
    inFlight = next.catch(() => undefined)
    return next
  }
  /** This package's session model over the session's history, as dreaming and `/memory why` read it. */
  const memoryOf = (ctx: ExtensionContext) => {
    const dir = agentDir()
    const sessionDir = liveSessionDir(ctx.sessionManager, dir, ctx.cwd, trustedOf(ctx))
    return { sessionDir, memory: createMemory({ agentDir: dir, cwd: ctx.cwd, sessionDir, config: memorySettings(dir, ctx.cwd, trustedOf(ctx)) }) }
  }
  const dreamOnce = (ctx: ExtensionContext, force: boolean): Promise<DreamOutcome> => {
    const store = state.store!
    const controller = state.abort ?? new AbortController()
    const { memory, sessionDir } = memoryOf(ctx)
    return dream({
      store,
      settings: state.dreaming ?? dreamingSettings(undefined),
      memory,
      registry: ctx.modelRegistry as never,
      currentModel: ctx.model,
      agentCore: options.agentCore,
      includeGlobal: state.includeGlobal === true,
      sessionDir,
      projectKey: projectKeySetting(ctx),
      signal: controller.signal,
      force,
    })
      .catch((error: unknown): DreamOutcome => ({ status: 'failed', message: `Dreaming failed: ${message(error)}; state unchanged.` }))
      .then((outcome) => {
      if (outcome.status !== 'not_due' && outcome.status !== 'locked') state.lastRun = outcome.message
      try {
        pi.events?.emit(DREAM_EVENT, outcome)
      } catch {}
      return outcome
    })
  }
  registerMemoryCommand(pi, () => state.store, {
    status: (ctx) =>
      state.store
        ? dreamingStatus(state.store.dir, state.dreaming ?? dreamingSettings(undefined), { model: ctx?.model, includeGlobal: state.includeGlobal, lastRun: state.lastRun })
        : '',
    dream: (ctx) => runDream(ctx, true),
    cited: (ctx) => {
      try {
        return ctx ? citationReader(memoryOf(ctx).memory.expand) : undefined
      } catch {
        return undefined // settings recall cannot use: the citations stay ids
      }
    },
    history: (ctx) => {
      try {
        return ctx ? memoryOf(ctx).memory : undefined
      } catch {
        return undefined // settings recall cannot use
      }
    },
  }, (ctx) => refreshStatus(ctx))

  /** Shows a background dream's outcome as one short footer line (runs that did not happen stay quiet). */
  const reportDream = async (ctx: ExtensionContext, outcome: DreamOutcome) => {
    const line = dreamFooter(outcome)
    try {
      if (line) ctx.ui?.setStatus(DREAM_STATUS_KEY, line)
      if (outcome.status === 'done') await refreshStatus(ctx)
    } catch {
      // The session may have ended meanwhile (a stale ctx throws).
    }
  }

  /** Starts the due-check in the background: never awaited, never adds a turn. */
  const startDream = (ctx: ExtensionContext) => {
    if (!ctx.modelRegistry || !state.dreaming?.enabled) return
    void runDream(ctx, false).then((outcome) => reportDream(ctx, outcome))
  }

  /** The footer: the live entry count, the proposals awaiting review, and separately whether the frozen prompt block holds anything. */
  const showStatus = (ctx: ExtensionContext) => {
    const store = state.store
    const live = store ? store.getEntries('memory').length + store.getEntries('user').length + (store.project ? store.getEntries('project').length : 0) : 0
    const review = state.toReview ? ` · ${state.toReview} to review` : ''
    const prompt = state.snapshot ? 'prompt snapshot loaded' : 'prompt snapshot empty until the next session'
    ctx.ui?.setStatus(STATUS_KEY, `memory: ${plural(live, 'entry')}${review} · ${prompt}`)
  }
  /** Counts the proposals again (a dream or `/memory review` changed them), then shows the footer. */
  const refreshStatus = async (ctx: ExtensionContext) => {
    const store = state.store
    if (store) {
      const listed = await store.proposals().catch(() => undefined)
      if (store === state.store) state.toReview = listed?.success ? listed.proposals.length : state.toReview
    }
    showStatus(ctx)
  }
  pi.on('tool_execution_end', (event, ctx) => {
    if (curatedTools.has((event as { toolName?: string }).toolName ?? '')) showStatus(ctx)
  })

  /** Renders the store's current snapshot and saves it in the session. */
  const capture = (store: MemoryStore, ctx: ExtensionContext) => {
    const snapshot = store.formatAllForSystemPrompt()
    pi.appendEntry<SavedSnapshot>(SNAPSHOT_ENTRY_TYPE, { version: 1, sessionId: ctx.sessionManager.getSessionId(), snapshot })
    return snapshot
  }

  pi.on('session_start', async (_event, ctx) => {
    try {
      const created = options.store ? undefined : createStore(ctx, options)
      const store = options.store ?? created!.store
      const report = await guarded(() => store.loadFromDisk())
      state.dreaming = dreamingSettings(created ? created.settings.dreaming : options.dreaming)
      // The default global store reads every project's sessions; a host store or a custom dataDir only the active session dir.
      state.includeGlobal = created !== undefined && readsEveryProject(store.dir)
      state.abort?.abort()
      state.abort = new AbortController()
      ctx.signal?.addEventListener('abort', () => state.abort?.abort(), { once: true })
      state.store = store
      state.snapshot = savedSnapshot(store, ctx.sessionManager) ?? capture(store, ctx)
      state.toReview = undefined
      await refreshStatus(ctx)
      // Dreaming is opt-in: until the user chooses (Pi's settings; a host chooses through its options), the footer says where to read how.
      ctx.ui?.setStatus(DREAM_STATUS_KEY, created && !state.dreaming.enabledSet ? OPT_IN_FOOTER : undefined)
      for (const file of [report.memory, report.user, report.project]) {
        if (file?.error) ctx.ui?.notify(`pi-fabric-memory: ${file.error}`, 'warning')
      }
      if (created?.warning) ctx.ui?.notify(`pi-fabric-memory: ${created.warning}`, 'warning')
      startDream(ctx)
    } catch (error) {
      state.store = undefined
      state.snapshot = undefined
      ctx.ui?.setStatus(STATUS_KEY, 'memory: unavailable')
      ctx.ui?.notify(`pi-fabric-memory: curated memory failed to initialize: ${message(error)}`, 'error')
    }
  })

  // Every run, including Pi 1.2+ runs started by a custom message without a prompt.
  pi.on('before_agent_start', (event) => {
    if (state.snapshot === undefined) return undefined
    const sections = promptSections(event)
    if (sections) {
      const block = memoryBlock(event.systemPrompt, state.snapshot)
      if (block) sections[MEMORY_SECTION] = block
      return undefined
    }
    const systemPrompt = composePrompt(event.systemPrompt, state.snapshot)
    return systemPrompt === event.systemPrompt ? undefined : { systemPrompt }
  })

  pi.on('session_compact', async (_event, ctx) => {
    const store = state.store
    if (!store) return
    await guarded(() => store.loadFromDisk())
    state.snapshot = capture(store, ctx)
    showStatus(ctx)
  })

  pi.on('session_tree', (_event, ctx) => {
    const saved = state.store && savedSnapshot(state.store, ctx.sessionManager)
    if (saved === undefined) return
    state.snapshot = saved
    showStatus(ctx)
  })

  pi.on('session_shutdown', () => {
    state.abort?.abort()
    state.abort = undefined
    state.store = undefined
    state.snapshot = undefined
  })
}
