import { MemoryEngine, type ExpandArgs, type IndexProgress, type ExpandPage, type FabricCall, type LiveBranchArg, type EvidencePack, type ForgetArgs, type ForgetResult, type PackArgs, type RecallArgs, type RecallPage, type SessionsArgs, type SessionsPage } from '../native.mjs'
import { catalog, MEMORY_ACTIONS, search, type ActionDescriptor, type Catalog } from './catalog.mjs'
import { guarded, MemoryUnsupportedError } from '../shared/errors.mjs'
import { walk, type WalkResult, type WalkSelector, type WalkVisitor } from './walk.mjs'

/** The part of Pi's `SessionManager` the live branch is read from. */
export interface LiveSessionSource {
  getSessionFile(): string | undefined
  getLeafId(): string | null
  getBranch(): ReadonlyArray<{ id: string }>
}

export interface CreateMemoryOptions {
  /** Pi's agent dir; default `PI_CODING_AGENT_DIR` or `~/.pi/agent`. */
  agentDir?: string
  /** The project directory; default `process.cwd()`. */
  cwd?: string
  /** Pi's custom session dir (flat), searched besides `<agentDir>/sessions`; relative to `cwd`. */
  sessionDir?: string
  /** The `memory` settings object (see the README's Configuration section). */
  config?: Record<string, unknown>
  /** Pi's live session, read on every call (or a getter for it). */
  live?: LiveSessionSource | (() => LiveSessionSource | undefined)
  /** More actions for the capability catalog (e.g. Pi's registered tools). */
  actions?: () => ActionDescriptor[]
}

/** A call to dispatch: `ref` decides; the Pi tool name a `follow`/`next` carries is not needed here. */
export type CallToken = Omit<FabricCall, 'tool'> & { tool?: FabricCall['tool'] }

export interface MemoryTools {
  /** Dispatches a copy-ready `follow`/`next` call. */
  call(call: CallToken): Promise<unknown>
  /** The deterministic provider → action tree. */
  catalog(): Catalog
  /** Actions ranked for a natural-language or ref query. */
  search(args: { query: string; limit?: number }): Array<ActionDescriptor & { score: number }>
  /** One action's full descriptor, or undefined. */
  describe(ref: string): ActionDescriptor | undefined
}

/** What a call that may index reports to: its plan, then each session built. */
export interface IndexingOptions {
  onProgress?: (progress: IndexProgress) => void
}

export interface Memory {
  /** `pin`: a hit's compact binding from the model's view of a page, in place of `scope` and the binding keys.
   * `onProgress` receives the indexing work the call does (a first recall's wait). */
  recall(args?: RecallArgs, options?: IndexingOptions): Promise<RecallPage>
  /** `pin`: a hit's compact binding, in place of `session`, `branches` and the binding keys. */
  expand(args?: ExpandArgs): Promise<ExpandPage>
  /** Cited, verified evidence about a query within `maxTokens` (result JSON chars / 4). `onProgress` as recall's. */
  pack(args?: PackArgs, options?: IndexingOptions): Promise<EvidencePack>
  /** `onProgress` receives the indexing work the call does. */
  sessions(args?: SessionsArgs, options?: IndexingOptions): Promise<SessionsPage>
  /** Recall, expand, sessions and packs never surface the session again (by its id and file) until `unforget`; its index records are removed. Pi's file is never touched. */
  forget(args: ForgetArgs): Promise<ForgetResult>
  /** Takes a forget back (the id, an id prefix or the file the list records). */
  unforget(args: ForgetArgs): Promise<ForgetResult>
  /** Every forgotten session (`forgotten`). */
  forgotten(): Promise<ForgetResult>
  walk(selector: WalkSelector | undefined, visitor: WalkVisitor): Promise<WalkResult>
  walk(visitor: WalkVisitor): Promise<WalkResult>
  tools: MemoryTools
  readonly agentDir: string
  readonly cwd: string
  /** Where the index lives (`memory.indexDir` or `<agentDir>/fabric/memory-index`). */
  readonly indexDir: string
  /** The `memory` configuration in effect, defaults filled in. */
  readonly config: Record<string, unknown>
}

/** What the addon gets as `live` on every call (exported for the argument-parity test). */
export function liveBranch(source: CreateMemoryOptions['live']): LiveBranchArg | undefined {
  const manager = typeof source === 'function' ? source() : source
  const sessionFile = manager?.getSessionFile()
  if (!manager || !sessionFile) return undefined
  return { sessionFile, leafId: manager.getLeafId(), branchIds: manager.getBranch().map((entry) => entry.id) }
}

export function createMemory(options: CreateMemoryOptions = {}): Memory {
  const engine = new MemoryEngine({ agentDir: options.agentDir, cwd: options.cwd, config: options.config, sessionDir: options.sessionDir })
  // The live branch is read on every call, so /tree navigation is seen at once.
  const live = () => liveBranch(options.live)
  // A `pin` (a hit's compact binding, pin.mts) is unfolded by the addon, so tools, scripts and hosts all accept it.
  const expand = (args: ExpandArgs = {}) => guarded(async () => engine.expand(args, live()))
  const sessions = (args: SessionsArgs = {}, { onProgress }: IndexingOptions = {}) => guarded(() => engine.sessions(args, live(), onProgress))
  const recall = (args: RecallArgs = {}, { onProgress }: IndexingOptions = {}) => guarded(async () => engine.recall(args, live(), onProgress))
  const pack = (args: PackArgs = {}, { onProgress }: IndexingOptions = {}) => guarded(() => engine.pack(args, live(), onProgress))
  const actions = () => [...MEMORY_ACTIONS, ...(options.actions?.() ?? [])]
  const memory: Memory = {
    recall,
    expand,
    sessions,
    pack,
    forget: (args) => guarded(() => engine.forget(args)),
    unforget: (args) => guarded(() => engine.unforget(args)),
    forgotten: () => guarded(() => engine.forgotten()),
    walk: ((selectorOrVisitor: WalkSelector | WalkVisitor | undefined, visitor?: WalkVisitor) =>
      typeof selectorOrVisitor === 'function'
        ? walk(expand, undefined, selectorOrVisitor)
        : walk(expand, selectorOrVisitor, visitor!)) as Memory['walk'],
    tools: {
      async call(call: CallToken) {
        const args = (call?.args ?? {}) as never
        // `memory.pack` is no page's follow call, but a host may dispatch it by ref like the others.
        switch (call?.ref as string) {
          case 'memory.expand':
            return expand(args)
          case 'memory.sessions':
            return sessions(args)
          case 'memory.recall':
            return recall(args)
          case 'memory.pack':
            return pack(args)
          default:
            throw new MemoryUnsupportedError(`tools.call: unknown ref ${JSON.stringify(call?.ref)}`)
        }
      },
      catalog: () => catalog(actions()),
      search: ({ query, limit }) => search(actions(), query, limit),
      describe: (ref) => actions().find((action) => action.ref === ref),
    },
    agentDir: engine.agentDir,
    cwd: engine.cwd,
    indexDir: engine.indexDir,
    config: engine.config,
  }
  return memory
}
