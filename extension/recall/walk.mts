import type { ExpandArgs, ExpandedEntry, ExpandPage, MemoryError } from 'pi-fabric-memory/native'

/** A complete entry as `memory.walk` hands it to the visitor. */
export type WalkEntry = ExpandedEntry

export type WalkVisitor = (entry: WalkEntry) => unknown | Promise<unknown>

export interface WalkResult {
  visited: number
  stopped: boolean
  error?: MemoryError
}

export interface WalkSelector extends ExpandArgs {}

type Expand = (args: ExpandArgs) => Promise<ExpandPage>

const SELECTION_KEYS = ['indices', 'entryIds', 'operationAddresses', 'entryRange'] as const

function hasSelection(selector: WalkSelector): boolean {
  return SELECTION_KEYS.some((key) => selector[key] !== undefined && selector[key] !== null)
}

function walkError(code: Extract<MemoryError['code'], `walk_${string}`>, message: string): MemoryError {
  return { code, message }
}

/**
 * With no selection, a no-selector expand binds the session's source hash and
 * lineage first, and the walk covers the whole normalized session under those
 * bindings. Its pages bind the source prefix they were cut from, so an append
 * mid-walk changes nothing (the range was fixed at the start); a rewrite or a
 * branch change ends it with `stale_pointer`.
 */
async function startArgs(expand: Expand, selector: WalkSelector): Promise<ExpandArgs | MemoryError | null> {
  if (hasSelection(selector)) return selector
  const bound = await expand({ session: selector.session, branches: selector.branches })
  if (bound.error) return bound.error
  if (!bound.entryCount) return null
  return {
    session: bound.session ?? undefined,
    branches: bound.branches,
    expectedSourceHash: bound.sourceHash ?? undefined,
    expectedLineageFingerprint: bound.lineageFingerprint ?? undefined,
    entryRange: { first: 0, last: bound.entryCount - 1 },
    maxChars: selector.maxChars,
    maxEntries: selector.maxEntries,
  }
}

/** Joins text chunks into complete entries, checking continuity. */
class Reassembler {
  private pending: WalkEntry | null = null

  /** Adds a chunk; returns the entry once its text is whole. */
  push(chunk: ExpandedEntry): WalkEntry | MemoryError | null {
    const pending = this.pending
    if (pending) {
      if (chunk.index !== pending.index || chunk.textRange.start !== pending.textRange.end) {
        return walkError('walk_discontinuity', `Entry ${pending.index} continued at entry ${chunk.index} offset ${chunk.textRange.start}.`)
      }
      pending.text += chunk.text
      pending.textRange = { ...chunk.textRange, start: 0 }
    } else {
      if (chunk.textRange.start !== 0) {
        return walkError('walk_discontinuity', `Entry ${chunk.index} started at text offset ${chunk.textRange.start}.`)
      }
      this.pending = { ...chunk, textRange: { ...chunk.textRange } }
    }
    const entry = this.pending!
    if (!entry.textRange.complete) return null
    this.pending = null
    return entry
  }

  get incomplete(): boolean {
    return this.pending !== null
  }
}

function isError(value: unknown): value is MemoryError {
  return typeof value === 'object' && value !== null && 'code' in value && 'message' in value && !('textRange' in value)
}

/**
 * `memory.walk(selector?, visitor)`: follows every expansion page, hands the
 * visitor each complete entry once, awaits it, and stops when it returns
 * exactly `false`.
 */
export async function walk(expand: Expand, selector: WalkSelector | undefined, visitor: WalkVisitor): Promise<WalkResult> {
  const start = await startArgs(expand, selector ?? {})
  if (start === null) return { visited: 0, stopped: false }
  if (isError(start)) return { visited: 0, stopped: false, error: start }
  if (start.textOffset) throw new TypeError('memory.walk: start from an original selection, not a continuation with a textOffset')
  let visited = 0
  const reassembler = new Reassembler()
  let page = await expand(start)
  for (;;) {
    if (page.error) return { visited, stopped: false, error: page.error }
    for (const chunk of page.entries) {
      const entry = reassembler.push(chunk)
      if (entry === null) continue
      if (isError(entry)) return { visited, stopped: false, error: entry }
      visited += 1
      if ((await visitor(entry)) === false) return { visited, stopped: true }
    }
    if (!page.next) break
    page = await expand(page.next.args as ExpandArgs)
  }
  if (reassembler.incomplete) {
    return { visited, stopped: false, error: walkError('walk_incomplete', 'The last entry ended before its text was complete.') }
  }
  return { visited, stopped: false }
}
