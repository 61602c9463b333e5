/** Recent transcript turns, read through this package's own session model (`memory.sessions` + `memory.walk`). */

import { readdirSync, statSync } from 'node:fs'
import { basename, join, resolve } from 'node:path'
import type { Memory } from '../recall/create-memory.mjs'
import { agentDir } from '../shared/settings.mjs'
import { MAX_SESSIONS, TURN_SIDE_CHARS } from './settings.mjs'

export interface Turn {
  sessionId: string
  /** The session file (its header's cwd says which project it belongs to). */
  file?: string
  user: string
  assistant: string
  /** The Pi entry ids of the turn's user message and assistant messages: its citation. */
  entryIds: string[]
  /** Ms since the epoch of the turn's last assistant message. */
  at: number
}

export interface GatherOptions {
  /** The default global store: every project's sessions (plus `sessionDir`). */
  includeGlobal: boolean
  /** The active session directory, always read. */
  sessionDir?: string
  /** Only turns completed after this (ms); sessions not modified since are skipped. */
  since?: number
  signal?: AbortSignal
  maxSessions?: number
}

/** Whether a store built from settings is the default global one (`<agentDir>/memories`), whose runs read every project's sessions. */
export const readsEveryProject = (storeDir: string): boolean => resolve(storeDir) === resolve(agentDir(), 'memories')

const clip = (text: string, max = TURN_SIDE_CHARS) => (text.length <= max ? text : `${text.slice(0, max)}…`)

/** Recent turns (a user message and the assistant text after it) from each session's active branch, oldest first. */
export async function gatherTurns(memory: Pick<Memory, 'sessions' | 'walk'>, options: GatherOptions): Promise<Turn[]> {
  const since = options.since ?? -Infinity
  const files = new Map<string, number>()
  const ids = new Map<string, string>()
  if (options.includeGlobal) {
    const page = await memory.sessions({ scope: 'global', limit: options.maxSessions ?? MAX_SESSIONS })
    for (const row of page.sessions) {
      files.set(row.file, row.mtime)
      ids.set(row.file, row.id)
    }
  }
  if (options.sessionDir) {
    let names: string[] = []
    try {
      names = readdirSync(options.sessionDir).filter((name) => name.endsWith('.jsonl'))
    } catch {}
    for (const name of names) {
      const file = join(options.sessionDir, name)
      try {
        if (!files.has(file)) files.set(file, statSync(file).mtimeMs)
      } catch {}
    }
  }
  const recent = [...files]
    .filter(([, mtime]) => mtime > since)
    .sort((a, b) => b[1] - a[1])
    .slice(0, options.maxSessions ?? MAX_SESSIONS)
  const turns: Turn[] = []
  for (const [file] of recent) {
    if (options.signal?.aborted) break
    const sessionId = ids.get(file) ?? basename(file, '.jsonl').replace(/^.*_/, '')
    let open: Turn | undefined
    const close = () => {
      if (open && open.assistant && open.at > since) turns.push({ ...open, user: clip(open.user), assistant: clip(open.assistant) })
      open = undefined
    }
    const result = await memory.walk({ session: file, branches: 'active' }, (entry) => {
      if (options.signal?.aborted) return false
      if (entry.role === 'user') {
        close()
        open = { sessionId, file, user: entry.text, assistant: '', entryIds: entry.entryId ? [entry.entryId] : [], at: entry.timestamp ?? 0 }
      } else if (entry.role === 'assistant' && open && entry.text.trim()) {
        open.assistant = open.assistant ? `${open.assistant}\n${entry.text}` : entry.text
        if (entry.entryId) open.entryIds.push(entry.entryId)
        open.at = entry.timestamp ?? open.at
      }
      return undefined
    })
    close()
    void result // a session that cannot be read (changed, unavailable) contributes the turns read before the error
  }
  return turns.sort((a, b) => a.at - b.at)
}
