/**
 * The curated-memory tools (`memory_add`, `memory_replace`, `memory_remove`,
 * `memory_read`, and `memory_apply` for an all-or-nothing batch) over a
 * native `MemoryStore`.
 *
 * Every result carries readable JSON text in `content`, the result object in
 * `details` and, for Pi versions with code mode (`outputSchema` +
 * `structuredContent`), a bounded structured copy. Failed writes are
 * `isError: true` results that keep their data instead of throwing.
 */
import type { AgentToolResult, ToolDefinition } from '@earendil-works/pi-coding-agent'
import { type TSchema, Type } from '../shared/schema.mjs'
import type { MemoryOperation, MemoryStoreResult, MemoryTarget } from 'pi-fabric-memory/native'
import { guarded } from '../shared/errors.mjs'
import { MEMORY_NAMESPACE } from '../recall/namespace.mjs'

/** Structured output bounds (code mode): bytes of JSON and complete records per list. */
export const MAX_STRUCTURED_BYTES = 12 * 1024
export const MAX_STRUCTURED_RECORDS = 100
/** Bound of the readable text; a longer result is shown in its structured (bounded) form. */
export const MAX_TEXT_CHARS = 30_000

const LISTS = ['entries', 'provenance', 'currentEntries', 'matches', 'operations'] as const

/** Short rules Pi adds to the system prompt's guidelines while the tools are active. */
export const MEMORY_GUIDELINES = [
  'Memory (memory_* tools): save durable declarative facts that spare the user repeating themselves (preferences, stable environment facts, project conventions), never task progress, PR numbers, commit SHAs or anything stale within a week; write facts ("User prefers concise answers"), not instructions.',
  'Memory: correct a fact with memory_replace rather than adding a near-duplicate; when a write fails for capacity, consolidate using the reported entries and usage, and never retry an unchanged failing add.',
]

/** The same rules as one block, appended to the system prompt once when Pi has not already listed them. */
export const MEMORY_GUIDANCE = ['# Memory guidance', ...MEMORY_GUIDELINES.map((line) => `- ${line}`)].join('\n')

/**
 * The store calls the tools make: a `MemoryStore`, or dreaming's staging
 * store, the only one handed `evidence` (tools created with `evidence: true`).
 */
export interface ToolStore {
  /** The project the store was opened for (its `MEMORY.md` is target `"project"`); absent or null: global only. */
  readonly project?: { name: string } | null
  add(target: MemoryTarget, content: string, evidence?: unknown): Promise<MemoryStoreResult>
  replace(target: MemoryTarget, oldText: string, newContent: string, evidence?: unknown): Promise<MemoryStoreResult>
  remove(target: MemoryTarget, oldText: string, evidence?: unknown): Promise<MemoryStoreResult>
  read(target: MemoryTarget, options?: { provenance?: boolean }): Promise<MemoryStoreResult>
  apply(target: MemoryTarget, operations: MemoryOperation[]): Promise<MemoryStoreResult>
}

export type StoreSource = ToolStore | (() => ToolStore | undefined)

/** What a memory tool returns: Pi's result plus the 1.x code-mode fields. */
export type MemoryToolResult = AgentToolResult<unknown> & { structuredContent?: unknown; isError?: boolean }

export type MemoryToolDefinition = ToolDefinition & { outputSchema?: TSchema; namespace?: typeof MEMORY_NAMESPACE }

export class MemoryOutputLimitError extends Error {
  readonly code = 'output_limit'
}

const Target = Type.Union([Type.Literal('memory'), Type.Literal('user')], { description: 'memory: MEMORY.md, user: USER.md' })
/** Which MEMORY.md: the project's or the one every project shares. USER.md has no project scope. */
export type MemoryScope = 'global' | 'project'
/** No description of its own: memory_add's says it once (every declared character is sent each turn). */
const Scope = Type.Union([Type.Literal('global'), Type.Literal('project')])
const OldText = Type.String({ description: 'A unique substring of the entry' })

const OutputSchema = Type.Object({
  success: Type.Boolean(),
  target: Type.Optional(Target),
  scope: Type.Optional(Scope),
  entries: Type.Optional(Type.Array(Type.String())),
  usage: Type.Optional(Type.String()),
  entryCount: Type.Optional(Type.Integer()),
  message: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  matches: Type.Optional(Type.Array(Type.String())),
  currentEntries: Type.Optional(Type.Array(Type.String())),
  replacedEntry: Type.Optional(Type.String()),
  removedEntry: Type.Optional(Type.String()),
  operations: Type.Optional(Type.Array(Type.Object({ index: Type.Integer(), action: Type.String(), status: Type.String(), entry: Type.Optional(Type.String()) }))),
  provenance: Type.Optional(
    Type.Array(
      Type.Union([
        Type.Object({
          citations: Type.Array(Type.Object({ session: Type.String(), entryId: Type.String() })),
          recordedAt: Type.Integer(),
          proposal: Type.Optional(Type.Integer()),
        }),
        Type.Null(),
      ]),
      { description: 'memory_read with provenance: provenance[i] for entries[i]; null: none recorded (written by hand or by the model directly).' },
    ),
  ),
  provenanceError: Type.Optional(Type.String()),
  failedOperation: Type.Optional(Type.Object({ index: Type.Integer(), action: Type.Optional(Type.String()) })),
  driftBackup: Type.Optional(Type.String()),
  remediation: Type.Optional(Type.String()),
  truncated: Type.Optional(Type.Boolean({ description: 'Records were omitted: check before reusing entries for an update.' })),
  total: Type.Optional(Type.Integer({ description: 'The original number of records of the truncated list.' })),
})

const utf8Bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8')

/**
 * The structured copy within {@link MAX_STRUCTURED_BYTES} and
 * {@link MAX_STRUCTURED_RECORDS}: whole records are omitted from the end of
 * a list (`truncated`, `total`), never cut. A record that could not fit even
 * alone is an output-limit error: clipped entry text must never be reused.
 */
export function boundStructured(result: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...result }
  for (const key of LISTS) {
    const list = out[key]
    if (!Array.isArray(list)) continue
    let kept = list.slice(0, MAX_STRUCTURED_RECORDS)
    const mark = () => Object.assign(out, { [key]: kept, truncated: true, total: list.length })
    if (kept.length < list.length) mark()
    while (utf8Bytes(out) > MAX_STRUCTURED_BYTES && kept.length > 0) {
      kept = kept.slice(0, -1)
      mark()
    }
    const firstOmitted = list[kept.length]
    if (firstOmitted !== undefined && utf8Bytes({ ...out, [key]: [firstOmitted] }) > MAX_STRUCTURED_BYTES) {
      throw new MemoryOutputLimitError(
        `A memory entry is too large for a structured result (over ${MAX_STRUCTURED_BYTES} bytes). ` +
          'A write may already have completed: use memory_read to inspect the saved state before retrying.',
      )
    }
  }
  if (utf8Bytes(out) > MAX_STRUCTURED_BYTES) {
    throw new MemoryOutputLimitError(`The memory result is larger than ${MAX_STRUCTURED_BYTES} bytes.`)
  }
  return out
}

function resolveStore(source: StoreSource): ToolStore {
  const store = typeof source === 'function' ? source() : source
  if (!store) throw new Error('pi-fabric-memory: curated memory is not loaded (no session has started)')
  return store
}

/** Pi validates `target`; direct callers get the original's leniency: anything but "user" is "memory". */
const targetOf = (params: { target?: unknown }): 'memory' | 'user' => (params.target === 'user' ? 'user' : 'memory')

/**
 * The store's file for a tool's target and scope: `user` is always USER.md;
 * `memory` is the project's MEMORY.md with scope `project`, or by default when
 * the store has a project, else the global MEMORY.md.
 */
export function fileOf(store: Pick<ToolStore, 'project'>, target: 'memory' | 'user', scope: unknown): { file: MemoryTarget; scope: MemoryScope } {
  if (target === 'user') return { file: 'user', scope: 'global' }
  const project = scope === 'project' || (scope !== 'global' && Boolean(store.project))
  return project ? { file: 'project', scope: 'project' } : { file: 'memory', scope: 'global' }
}

/** Shapes a store result as a Pi tool result (see the module comment); the text is compact JSON (tokens are billed). */
export function toolResult(result: MemoryStoreResult, target: MemoryTarget, scope?: MemoryScope): MemoryToolResult {
  // The native target `project` is the tool's target `memory` in scope `project`.
  const shown = { ...result, ...(scope ? { target: target === 'project' ? 'memory' : target, scope } : {}) } as MemoryStoreResult
  const record = { ...shown } as Record<string, unknown>
  const failed = result.success === false
  let structuredContent: Record<string, unknown>
  try {
    structuredContent = boundStructured({ ...record, target: scope ? record.target : target })
  } catch (error) {
    if (!(error instanceof MemoryOutputLimitError)) throw error
    const details = { success: false, target: record.target ?? target, ...(scope ? { scope } : {}), error: error.message, code: error.code }
    return { content: [{ type: 'text', text: JSON.stringify(details) }], details, structuredContent: details, isError: true }
  }
  const full = JSON.stringify(shown)
  const text = full.length <= MAX_TEXT_CHARS ? full : JSON.stringify(structuredContent)
  return { content: [{ type: 'text', text }], details: shown, structuredContent, ...(failed ? { isError: true } : {}) }
}

function memoryTool(
  name: string,
  description: string,
  promptSnippet: string,
  parameters: TSchema,
  run: (store: ToolStore, target: MemoryTarget, params: Record<string, unknown>) => Promise<MemoryStoreResult>,
  source: StoreSource,
  extra: Partial<MemoryToolDefinition> = {},
): MemoryToolDefinition {
  return {
    name,
    label: 'Memory',
    description,
    promptSnippet,
    parameters,
    outputSchema: OutputSchema,
    namespace: MEMORY_NAMESPACE,
    ...extra,
    async execute(_toolCallId: string, params: unknown): Promise<MemoryToolResult> {
      const args = (params ?? {}) as Record<string, unknown>
      const store = resolveStore(source)
      const { file, scope } = fileOf(store, targetOf(args), args.scope)
      const result = await guarded(() => run(store, file, args))
      return toolResult(result, file, scope)
    },
  } as MemoryToolDefinition
}

const str = (value: unknown) => String(value ?? '')

/** Dreaming's citations: addresses from the transcript or from memory_recall / memory_expand results. */
const Evidence = Type.Array(
  Type.Object({
    session: Type.String({ description: 'The session id (or a recall hit follow.args session).' }),
    entryIds: Type.Optional(Type.Array(Type.String(), { description: 'The cited entry ids.' })),
    indices: Type.Optional(Type.Array(Type.Integer(), { description: 'Or entry indices, as a recall hit follow.args gives them.' })),
  }),
  {
    minItems: 1,
    maxItems: 16,
    description:
      'The session entries this fact comes from: a cite object from the transcript, or a recall hit follow.args, unchanged. ' +
      'Each cited entry must contain the fact\'s distinctive words, or the change is dropped.',
  },
)

const operationSchema = (evidence: boolean) =>
  // Flat (no union): every provider's tool-schema dialect accepts it; the store checks which fields an action needs.
  Type.Object({
    action: Type.Union([Type.Literal('add'), Type.Literal('replace'), Type.Literal('remove')]),
    content: Type.Optional(Type.String({ description: 'add' })),
    oldText: Type.Optional(Type.String({ description: 'replace/remove: a unique substring of the entry' })),
    newContent: Type.Optional(Type.String({ description: 'replace' })),
    ...(evidence ? { evidence: Type.Optional(Evidence) } : {}),
  })

/** Only dreaming's (verifying) store is handed evidence: a model's own writes record none. */
const operationsOf = (value: unknown, evidence: boolean) =>
  (Array.isArray(value) ? value : []).map((op) => {
    if (evidence || !op || typeof op !== 'object') return op
    const { evidence: _dropped, ...plain } = op as Record<string, unknown>
    return plain
  }) as MemoryOperation[]

export interface MemoryToolOptions {
  /** Dreaming: writes take an `evidence` parameter, passed to the store (which verifies it). */
  evidence?: boolean
}

/**
 * The five tools over `store` (or a getter, for stores created when a Pi
 * session starts), in the order `memory_add`, `memory_replace`,
 * `memory_remove`, `memory_read`, `memory_apply`.
 */
export function createMemoryTools(store: StoreSource, options: MemoryToolOptions = {}): MemoryToolDefinition[] {
  const cited = options.evidence === true
  // Optional: a write without evidence reaches the store, which drops it and counts it.
  const evidenceParam: Record<string, TSchema> = cited ? { evidence: Type.Optional(Evidence) } : {}
  const evidenceOf = (p: Record<string, unknown>) => (cited ? [p.evidence] : [])
  return [
    memoryTool(
      'memory_add',
      'Append one durable fact to MEMORY.md (target "memory": environment, conventions, procedures; scope "project" ' +
        '(default in a repo): this project only, "global": every project) or USER.md (target "user": who the user ' +
        'is, what they prefer). Save when corrected or asked to remember. Returns the live entries; ' +
        'the prompt keeps the session-start snapshot.',
      'Append durable facts to MEMORY.md or USER.md.',
      Type.Object({ target: Target, scope: Type.Optional(Scope), content: Type.String(), ...evidenceParam }),
      (s, target, p) => s.add(target, str(p.content), ...evidenceOf(p)),
      store,
      { promptGuidelines: MEMORY_GUIDELINES },
    ),
    memoryTool(
      'memory_replace',
      'Replace the whole entry containing oldText with newContent (keep its still-valid qualifiers). ' +
        'No or several matches: the result lists the entries; pick a unique substring, do not guess.',
      'Update an existing MEMORY.md or USER.md entry.',
      Type.Object({
        target: Target,
        scope: Type.Optional(Scope),
        oldText: OldText,
        newContent: Type.String(),
        ...evidenceParam,
      }),
      (s, target, p) => s.replace(target, str(p.oldText), str(p.newContent), ...evidenceOf(p)),
      store,
    ),
    memoryTool(
      'memory_remove',
      'Delete the entry containing oldText. Only for facts that are wrong, redundant or superseded (unrelated to the task is not obsolete).',
      'Delete an entry from MEMORY.md or USER.md.',
      Type.Object({ target: Target, scope: Type.Optional(Scope), oldText: OldText, ...evidenceParam }),
      (s, target, p) => s.remove(target, str(p.oldText), ...evidenceOf(p)),
      store,
    ),
    memoryTool(
      'memory_read',
      'The live entries and usage of MEMORY.md or USER.md, read from disk (writes since the session started included). ' +
        'provenance: true adds provenance[i], the Pi session and entry ids entries[i] was written from (null: none recorded).',
      'Read the current contents of MEMORY.md or USER.md.',
      Type.Object({
        target: Target,
        scope: Type.Optional(Scope),
        provenance: Type.Optional(Type.Boolean()),
      }),
      (s, target, p) => (p.provenance === true ? s.read(target, { provenance: true }) : s.read(target)),
      store,
    ),
    memoryTool(
      'memory_apply',
      'Apply add/replace/remove operations to one target all or nothing, in order: the size limit applies to the ' +
        'final result (a merge may add before it removes); on a failure nothing is written and failedOperation names it.',
      'Apply several memory edits to MEMORY.md or USER.md at once, all or nothing.',
      Type.Object({ target: Target, scope: Type.Optional(Scope), operations: Type.Array(operationSchema(cited), { minItems: 1, maxItems: 100 }) }),
      (s, target, p) => s.apply(target, operationsOf(p.operations, cited)),
      store,
    ),
  ]
}
