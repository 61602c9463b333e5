/**
 * Forgotten sessions as people read them, in the CLI, `/memory` and `doctor`:
 * one line each, the short id (and the entry's id when one entry was
 * forgotten), when it was forgotten and its file.
 */
import type { ForgottenSession } from 'pi-fabric-memory/native'
import { minuteOf, plural, shortId } from './text.mjs'

/** The short session id, and ` entry <id>` when one entry of it was forgotten. */
export function forgottenName(session: ForgottenSession): string {
  return session.entryId === undefined ? shortId(session.sessionId) : `${shortId(session.sessionId)} entry ${session.entryId}`
}

export function forgottenLine(session: ForgottenSession): string {
  return `${forgottenName(session)}  forgotten ${minuteOf(session.forgottenAt)}  ${session.file}`
}

/** A heading and a line per session or entry; `none` when nothing is forgotten. */
export function forgottenText(sessions: ForgottenSession[]): string {
  if (sessions.length === 0) return 'Forgotten sessions: none.'
  const entries = sessions.filter((s) => s.entryId !== undefined).length
  const counts = [plural(sessions.length - entries, 'session'), ...(entries ? [plural(entries, 'entry')] : [])].join(', ')
  return [`Forgotten sessions (${counts}; recall never surfaces them):`, ...sessions.map((s) => `  ${forgottenLine(s)}`)].join('\n')
}
