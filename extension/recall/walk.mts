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

/** `memory.expand`, as the readers of its pages call it. */
export type Expand = (args: ExpandArgs) => Promise<ExpandPage>

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

/**
 * Joins text chunks into complete entries, checking continuity: a chunk
 * continues the open entry at the offset where its text so far ends, and a
 * new entry starts at offset 0. The same checks as the codemode `walk` of
 * `WALK_SOURCE` (namespace.mts); a test runs both over the same pages.
 */
class Reassembler {
  private pending: WalkEntry | null = null

  /** Adds a chunk; returns the entry once its text is whole. */
  push(chunk: ExpandedEntry): WalkEntry | MemoryError | null {
    const pending = this.pending
    if (pending) {
      if (chunk.index !== pending.index || chunk.textRange.start !== pending.text.length) {
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

/** The visitor of {@link readEntries}: a whole entry and the page its last chunk came on; exactly `false` stops. */
export type PageVisitor = (entry: WalkEntry, page: ExpandPage) => unknown | Promise<unknown>

export interface ReadOptions {
  /** Pages read at most; more to read after them ends the read with `walk_incomplete`. */
  maxPages?: number
}

/**
 * The one reader of expand pages: from `args` (an original selection, not a
 * continuation), follows every `next` page, joins each entry's text chunks
 * (continuity checked) and hands `visit` each whole entry once, awaiting it.
 * A page's contract error, a discontinuity and a last entry left open end
 * the read with that error. `memory.walk`, the CLI's `expand` and dreaming's
 * evidence check all read through it.
 */
export async function readEntries(expand: Expand, args: ExpandArgs, visit: PageVisitor, { maxPages = Infinity }: ReadOptions = {}): Promise<WalkResult> {
  let visited = 0
  const reassembler = new Reassembler()
  let page = await expand(args)
  for (let read = 1; ; read++) {
    if (page.error) return { visited, stopped: false, error: page.error }
    for (const chunk of page.entries) {
      const entry = reassembler.push(chunk)
      if (entry === null) continue
      if (isError(entry)) return { visited, stopped: false, error: entry }
      visited += 1
      if ((await visit(entry, page)) === false) return { visited, stopped: true }
    }
    if (!page.next) break
    if (read >= maxPages) return { visited, stopped: false, error: walkError('walk_incomplete', `The entries did not end within ${maxPages} pages.`) }
    page = await expand(page.next.args as ExpandArgs)
  }
  if (reassembler.incomplete) {
    return { visited, stopped: false, error: walkError('walk_incomplete', 'The last entry ended before its text was complete.') }
  }
  return { visited, stopped: false }
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
  return readEntries(expand, start, (entry) => visitor(entry))
}
