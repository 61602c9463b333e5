/**
 * The words a provenance citation points at, for `/memory why` and the
 * CLI's `memory why`: each cited Pi session entry read through this
 * package's own `memory.expand` (never the JSONL directly), shortened to an
 * excerpt.
 */
import type { ExpandArgs, ExpandPage, MemoryCitation } from 'pi-fabric-memory/native'

/** Characters of an entry's text read for its excerpt (the least `memory.expand` takes). */
export const EXCERPT_CHARS = 256

export type CitedWords =
  | { ok: true; sessionId: string; entryId: string; role: string | null; timestamp: number | null; text: string }
  | { ok: false; sessionId: string; entryId: string; error: string }

/** Reads one citation's words; never throws. */
export type CitationReader = (citation: MemoryCitation) => Promise<CitedWords>

/** A reader over `expand` (`memory.expand`): the cited entry on any branch, its text cut to {@link EXCERPT_CHARS}. */
export function citationReader(expand: (args: ExpandArgs) => Promise<ExpandPage>): CitationReader {
  return async ({ session, entryId }) => {
    const failed = (error: string): CitedWords => ({ ok: false, sessionId: session, entryId, error })
    try {
      const page = await expand({ session, entryIds: [entryId], branches: 'all', maxChars: EXCERPT_CHARS })
      if (page.error) return failed(`${page.error.code}: ${page.error.message}`)
      const entry = page.entries.find((e) => e.entryId === entryId)
      if (!entry) return failed('the session no longer holds this entry')
      return { ok: true, sessionId: page.sessionId ?? session, entryId, role: entry.role, timestamp: entry.timestamp, text: entry.text }
    } catch (error) {
      return failed(error instanceof Error ? error.message : String(error))
    }
  }
}
