/**
 * How session history reads for people, in the CLI and in Pi's TUI alike:
 * what an entry is (`assistant tool=bash outcome=failed`) and whether an
 * answer covers every session (`complete`, `incomplete: <reasons>`).
 */
import type { EntryMeta, MemoryCoverage } from 'pi-fabric-memory/native'

/** `toolResult tool=bash outcome=failed`: an entry's role, tool and outcome, the ones it has. */
export const entryLabel = (entry: Pick<EntryMeta, 'role' | 'tool' | 'outcome'>) =>
  [entry.role, entry.tool && `tool=${entry.tool}`, entry.outcome && `outcome=${entry.outcome}`].filter(Boolean).join(' ')
