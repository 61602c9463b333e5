/**
 * The Pi extension: registers the memory tools and reads Pi's live branch on
 * every call. Loaded by Pi through `pi.extensions` in package.json.
 */
import type { ExtensionAPI, ExtensionContext } from '@earendil-works/pi-coding-agent'
import { Type } from 'typebox'
import { memoryExtension, type MemoryExtensionOptions } from './curated.mjs'
import { createMemory, type Memory } from './memory.mjs'
import { agentDir, memorySettings } from './settings.mjs'

export { createMemory } from './memory.mjs'
export type { CreateMemoryOptions, LiveSessionSource, Memory } from './memory.mjs'
export type { WalkEntry, WalkResult, WalkSelector, WalkVisitor } from './walk.mjs'
export { MemoryStore } from 'pi-fabric-memory'
export { memoryExtension, SNAPSHOT_ENTRY_TYPE, type MemoryExtensionOptions } from './curated.mjs'
export { createMemoryTools, MEMORY_GUIDANCE, MEMORY_GUIDELINES, type MemoryToolDefinition } from './memory-tools.mjs'
export { runMemoryCommand } from './memory-command.mjs'

const Branches = Type.Union([Type.Literal('active'), Type.Literal('all')], {
  description: '"active" (default): only the current branch; "all": every branch of the session tree',
})

const ExpandParameters = Type.Object({
  session: Type.Optional(Type.String({ description: 'Session id, file stem or absolute path; default: the current session' })),
  branches: Type.Optional(Branches),
  indices: Type.Optional(Type.Array(Type.Integer(), { description: 'Normalized entry indices' })),
  entryIds: Type.Optional(Type.Array(Type.String(), { description: 'Pi entry ids' })),
  operationAddresses: Type.Optional(Type.Array(Type.String(), { description: 'Fabric operation addresses, e.g. "entry/3"' })),
  entryRange: Type.Optional(Type.Object({ first: Type.Integer(), last: Type.Integer() })),
  before: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'Entries of context before the one selected entry' })),
  after: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, description: 'Entries of context after the one selected entry' })),
  maxChars: Type.Optional(Type.Integer({ minimum: 256, maximum: 24000 })),
  maxEntries: Type.Optional(Type.Integer({ minimum: 1, maximum: 20 })),
  expectedSourceHash: Type.Optional(Type.String()),
  expectedLineageFingerprint: Type.Optional(Type.String()),
  entryOffset: Type.Optional(Type.Integer({ minimum: 0 })),
  textOffset: Type.Optional(Type.Integer({ minimum: 0 })),
})

const SessionsParameters = Type.Object({
  scope: Type.Optional(
    Type.String({ description: '"session", "project" (default), "global" (all projects) or "session:<id-or-path>"' }),
  ),
  branches: Type.Optional(Branches),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
})

function jsonResult<T>(details: T) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(details) }], details }
}

/** One memory per cwd; each call reads the live branch from `ctx`. */
function memoryFor(cache: Map<string, Memory>, ctx: ExtensionContext): Memory {
  let memory = cache.get(ctx.cwd)
  if (!memory) {
    const dir = agentDir()
    const trusted = typeof ctx.isProjectTrusted === 'function' ? ctx.isProjectTrusted() : true
    memory = createMemory({ agentDir: dir, cwd: ctx.cwd, config: memorySettings(dir, ctx.cwd, trusted), live: ctx.sessionManager })
    cache.set(ctx.cwd, memory)
  }
  return memory
}

export default function piFabricMemory(pi: ExtensionAPI, curated?: MemoryExtensionOptions): void {
  const memories = new Map<string, Memory>()
  // The live SessionManager changes with /new, /resume and /fork: read it per call.
  const current = (ctx: ExtensionContext) => {
    const memory = memoryFor(memories, ctx)
    return { memory, live: ctx.sessionManager }
  }

  pi.registerTool({
    name: 'memory_expand',
    label: 'Memory: expand',
    description:
      'Read complete, normalized entries of a Pi session (this one by default) from its JSONL history. ' +
      'Select entries by indices, entryIds, operationAddresses or entryRange; before/after add context around one entry. ' +
      'Long text arrives in chunks with textRange; when the result has a non-null `next`, call memory_expand again ' +
      'with `next.args` unchanged to continue. Errors such as stale_pointer come back in `error`.',
    promptSnippet: 'memory_expand: read full entries of this or an earlier Pi session by index, entry id or range',
    parameters: ExpandParameters,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const { memory } = current(ctx)
      return jsonResult(await memory.expand(params))
    },
  })

  pi.registerTool({
    name: 'memory_sessions',
    label: 'Memory: sessions',
    description:
      'List Pi sessions newest first, with id, file, cwd, mtime and entry count. ' +
      'scope "project" (default) lists this project, "global" every project, "session" the current one.',
    promptSnippet: 'memory_sessions: list earlier Pi sessions of this project',
    parameters: SessionsParameters,
    async execute(_toolCallId, params, _signal, _onUpdate, ctx) {
      const { memory } = current(ctx)
      return jsonResult(await memory.sessions(params as never))
    },
  })

  // Curated memory (MEMORY.md / USER.md): tools, /memory and the prompt snapshot.
  memoryExtension(pi, curated)
}
