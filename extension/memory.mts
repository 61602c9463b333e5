import { MemoryEngine, type ExpandArgs, type ExpandPage, type FabricCall, type LiveBranchArg, type SessionsArgs, type SessionsPage } from 'pi-fabric-memory'
import { guarded, MemoryUnsupportedError } from './errors.mjs'
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
  /** The `memory` settings object (see the README's Configuration section). */
  config?: Record<string, unknown>
  /** Pi's live session, read on every call (or a getter for it). */
  live?: LiveSessionSource | (() => LiveSessionSource | undefined)
}

export interface Memory {
  /** Arrives with the recall issue; rejects with `unsupported_call` until then. */
  recall(args?: Record<string, unknown>): Promise<never>
  expand(args?: ExpandArgs): Promise<ExpandPage>
  sessions(args?: SessionsArgs): Promise<SessionsPage>
  walk(selector: WalkSelector | undefined, visitor: WalkVisitor): Promise<WalkResult>
  walk(visitor: WalkVisitor): Promise<WalkResult>
  /** Dispatches a copy-ready `follow`/`next` call. */
  tools: { call(call: FabricCall): Promise<unknown> }
  readonly agentDir: string
  readonly cwd: string
}

function liveBranch(source: CreateMemoryOptions['live']): LiveBranchArg | undefined {
  const manager = typeof source === 'function' ? source() : source
  const sessionFile = manager?.getSessionFile()
  if (!manager || !sessionFile) return undefined
  return { sessionFile, leafId: manager.getLeafId(), branchIds: manager.getBranch().map((entry) => entry.id) }
}

export function createMemory(options: CreateMemoryOptions = {}): Memory {
  const engine = new MemoryEngine({ agentDir: options.agentDir, cwd: options.cwd, config: options.config })
  // The live branch is read on every call, so /tree navigation is seen at once.
  const live = () => liveBranch(options.live)
  const expand = (args: ExpandArgs = {}) => guarded(() => engine.expand(args, live()))
  const sessions = (args: SessionsArgs = {}) => guarded(() => engine.sessions(args, live()))
  const recall = async (): Promise<never> => {
    throw new MemoryUnsupportedError('memory.recall is not available in this version of pi-fabric-memory yet')
  }
  const memory: Memory = {
    recall,
    expand,
    sessions,
    walk: ((selectorOrVisitor: WalkSelector | WalkVisitor | undefined, visitor?: WalkVisitor) =>
      typeof selectorOrVisitor === 'function'
        ? walk(expand, undefined, selectorOrVisitor)
        : walk(expand, selectorOrVisitor, visitor!)) as Memory['walk'],
    tools: {
      async call(call: FabricCall) {
        const args = (call?.args ?? {}) as never
        switch (call?.ref) {
          case 'memory.expand':
            return expand(args)
          case 'memory.sessions':
            return sessions(args)
          case 'memory.recall':
            return recall()
          default:
            throw new MemoryUnsupportedError(`tools.call: unknown ref ${JSON.stringify(call?.ref)}`)
        }
      },
    },
    agentDir: engine.agentDir,
    cwd: engine.cwd,
  }
  return memory
}
