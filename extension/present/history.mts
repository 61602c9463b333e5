/**
 * How session history reads for people, in the CLI and in Pi's TUI alike:
 * what an entry is (`assistant tool=bash outcome=failed`) and whether an
 * answer covers every session (`complete`, `incomplete: <reasons>`).
 */
import type { EntryMeta, MemoryCoverage } from 'pi-fabric-memory/native'
import { plural } from './text.mjs'

/** `toolResult tool=bash outcome=failed`: an entry's role, tool and outcome, the ones it has. */
export const entryLabel = (entry: Pick<EntryMeta, 'role' | 'tool' | 'outcome'>) =>
  [entry.role, entry.tool && `tool=${entry.tool}`, entry.outcome && `outcome=${entry.outcome}`].filter(Boolean).join(' ')

/**
 * `complete`, or `incomplete: <reasons>`. Stale sessions alone carry no
 * reason code (e.g. doctor drops its probe's budget reasons): they are named.
 */
export function coverageText(c: MemoryCoverage): string {
  const note = projectNote(c)
  return note ? `${completeness(c)} · ${note}` : completeness(c)
}

function completeness(c: MemoryCoverage): string {
  if (c.complete) return 'complete'
  if (c.reasons.length) return `incomplete: ${c.reasons.join(', ')}`
  return c.staleSessions > 0 ? `incomplete: ${plural(c.staleSessions, 'session')} not indexed yet` : 'incomplete'
}

/**
 * `project scope is this folder only (git_file_malformed)` when the cwd's project identity fell back to the
 * cwd rule on ambiguous git evidence, so `project` does not span the repository's other checkouts. A cwd that
 * does not exist (`cwd_missing`) has no evidence to be ambiguous about and goes unsaid.
 */
export function projectNote(c: MemoryCoverage): string | undefined {
  const fallback = c.project?.fallback
  return fallback && fallback !== 'cwd_missing' ? `project scope is this folder only (${fallback})` : undefined
}
