/**
 * The Pi extension: registers the memory tools and reads Pi's live branch on
 * every call. Loaded by Pi through `pi.extensions` in package.json.
 */
import type { ExtensionAPI, ExtensionContext } from '@earendil-works/pi-coding-agent'
import { piActions, type ActionDescriptor } from './recall/catalog.mjs'
import { memoryExtension, type MemoryExtensionOptions } from './curated/extension.mjs'
import { exposed, toolsSetting, type ToolsSetting } from './shared/exposure.mjs'
import { createMemory, type Memory } from './recall/create-memory.mjs'
import { recallTools } from './recall/tools.mjs'
import type { TuiModule } from './tui/pi-tui.mjs'
import { recallRenderers } from './tui/recall.mjs'
import { agentDir, liveSessionDir, memorySettings } from './shared/settings.mjs'
import { startWarmUp, warmUpConfig, warmUpWanted, type WarmUp } from './recall/warm-up.mjs'

export { createMemory } from './recall/create-memory.mjs'
export { catalog, search, MEMORY_ACTIONS } from './recall/catalog.mjs'
export type { ActionDescriptor, Catalog } from './recall/catalog.mjs'
export type { CreateMemoryOptions, LiveSessionSource, Memory, MemoryTools } from './recall/create-memory.mjs'
export type { WalkEntry, WalkResult, WalkSelector, WalkVisitor } from './recall/walk.mjs'
export * from './native.mjs'
export { memoryExtension, MEMORY_SECTION, SNAPSHOT_ENTRY_TYPE, type MemoryExtensionOptions } from './curated/extension.mjs'
export { createMemoryTools, MEMORY_GUIDANCE, MEMORY_GUIDELINES, type MemoryToolDefinition } from './curated/tools.mjs'
export { runMemoryCommand } from './curated/command.mjs'
export { MEMORY_NAMESPACE, WALK_SOURCE } from './recall/namespace.mjs'

/** One memory per cwd. `session` is updated on every call: Pi replaces the
 * SessionManager on /new, /resume and /fork, and the branch is read from it per call. */
interface CwdMemory {
  memory: Memory
  session: ExtensionContext['sessionManager']
}

/** Where a memory for `ctx` looks and the settings it runs with, as Pi resolves them for the session. */
function memoryPlace(ctx: ExtensionContext) {
  const dir = agentDir()
  const trusted = typeof ctx.isProjectTrusted === 'function' ? ctx.isProjectTrusted() : true
  const sessionDir = liveSessionDir(ctx.sessionManager, dir, ctx.cwd, trusted)
  return { agentDir: dir, cwd: ctx.cwd, sessionDir, config: memorySettings(dir, ctx.cwd, trusted) }
}

function memoryFor(cache: Map<string, CwdMemory>, ctx: ExtensionContext, actions: () => ActionDescriptor[]): Memory {
  let entry = cache.get(ctx.cwd)
  if (!entry) {
    const holder = { session: ctx.sessionManager } as CwdMemory
    holder.memory = createMemory({ ...memoryPlace(ctx), live: () => holder.session, actions })
    entry = holder
    cache.set(ctx.cwd, entry)
  }
  entry.session = ctx.sessionManager
  return entry.memory
}

/** The background warm-up for the session `ctx` starts, unless the settings turn it off or are malformed (the tools then report them). */
function warmUpFor(ctx: ExtensionContext): WarmUp | undefined {
  try {
    const place = memoryPlace(ctx)
    if (!warmUpWanted(place.config)) return undefined
    return startWarmUp(createMemory({ ...place, config: warmUpConfig(place.config) }))
  } catch {
    return undefined
  }
}

/**
 * The Pi extension factory: recall tools and their background index warm-up
 * (unless `memory.enabled` is false in the global settings) and curated
 * memory. Hosts may pass their own store.
 */
export default function piFabricMemory(pi: ExtensionAPI, curated?: MemoryExtensionOptions): void {
  const settings = memorySettings(agentDir(), process.cwd(), false)
  const tools = toolsSetting(settings)
  if (settings.enabled !== false) registerRecallTools(pi, tools, curated?.tui)
  // Curated memory (MEMORY.md / USER.md): tools, /memory and the prompt snapshot.
  memoryExtension(pi, { tools, ...curated })
}

/** Pi's TUI renderers for one tool, when the running Pi's pi-tui was passed in (else Pi shows the JSON text). */
const renderersFor = (tool: string, tui: TuiModule | undefined) => (tui ? (recallRenderers(tool, tui) as object) : {})

function registerRecallTools(pi: ExtensionAPI, setting: ToolsSetting, tui?: TuiModule): void {
  const memories = new Map<string, CwdMemory>()
  const actions = () => piActions(typeof pi.getAllTools === 'function' ? pi.getAllTools() : [])
  // The session's warm-up, for the cwd it indexes: a recall there shows its progress while it waits.
  let warm: { cwd: string; warmUp: WarmUp } | undefined
  const warmUpOf = (ctx: ExtensionContext) => (warm && ctx?.cwd === warm.cwd ? warm.warmUp : undefined)
  const tools = recallTools((ctx) => memoryFor(memories, ctx, actions), (name) => renderersFor(name, tui), { warmUpOf })
  for (const tool of tools) pi.registerTool(exposed(tool, setting))
  pi.on('session_start', (_event, ctx) => {
    warm?.warmUp.stop()
    const warmUp = warmUpFor(ctx)
    warm = warmUp && { cwd: ctx.cwd, warmUp }
  })
  pi.on('session_shutdown', () => {
    warm?.warmUp.stop()
    warm = undefined
  })
}
