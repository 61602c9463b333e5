/**
 * Forgotten sessions as people read them, in the CLI, `/memory` and `doctor`:
 * one line each, the short id, when it was forgotten and its file.
 */
import type { ForgottenSession } from 'pi-fabric-memory/native'
import { minuteOf, plural, shortId } from './text.mjs'

export function forgottenLine(session: ForgottenSession): string {
  return `${shortId(session.sessionId)}  forgotten ${minuteOf(session.forgottenAt)}  ${session.file}`
}

/** A heading and a line per session; `none` when nothing is forgotten. */
export function forgottenText(sessions: ForgottenSession[]): string {
  if (sessions.length === 0) return 'Forgotten sessions: none.'
  return [`Forgotten sessions (${plural(sessions.length, 'session')}; recall never surfaces them):`, ...sessions.map((s) => `  ${forgottenLine(s)}`)].join('\n')
}
