// Writes a quality set's sessions as real Pi v3 session files, with the corpus generator's PRNG, ids and
// message shapes (bench/corpus.mjs: key order as Pi 0.80's SessionManager writes them).
//
// A set is plain data, so the converters (LoCoMo, the coding generator) never touch JSONL:
//   Turn       = { role: 'user', text } | { role: 'assistant', text?, calls?: [{ name, arguments }] }
//              | { role: 'toolResult', text, isError? }      (answers the previous assistant's calls, in order)
//                each may carry `ms` (its time); otherwise it is one minute after the previous turn.
//   SessionSpec = { key, cwd, startMs, turns }
//   Question    = { id, query, cwd, type, answers: [session key], note? }
//   QualitySet  = { name, sessions, questions, typeOrder? }
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { encodeCwd } from '../../dist/extension/shared/pi-paths.mjs'
import { MODELS, Rng, hash32, iso, usage, uuidv7 } from '../corpus.mjs'

/**
 * @typedef {{ role: 'user', text: string, ms?: number }
 *   | { role: 'assistant', text?: string, calls?: { name: string, arguments: Record<string, unknown> }[], ms?: number }
 *   | { role: 'toolResult', text: string, isError?: boolean, ms?: number }} Turn
 * @typedef {{ key: string, cwd: string, startMs: number, turns: Turn[] }} SessionSpec
 * @typedef {{ id: string, query: string, cwd: string, type: string, answers: string[], note?: string }} Question
 * @typedef {{ name: string, sessions: SessionSpec[], questions: Question[], typeOrder?: string[], skipped?: Record<string, number> }} QualitySet
 * @typedef {{ key: string, cwd: string, file: string, sessionId: string, mtimeMs: number, messages: Record<string, any>[], rank?: number, hot?: boolean }} WrittenSession
 */

const MINUTE = 60_000

/** The Pi JSONL lines of one session, and the `message` objects of its message entries (the baseline's input). */
export function renderSession(/** @type {SessionSpec} */ spec) {
  const rng = new Rng(hash32('quality-session', spec.key))
  const model = rng.weighted(MODELS, MODELS.map((m) => m.weight))
  const sessionId = uuidv7(spec.startMs, rng)
  let clock = spec.startMs
  let parentId = null
  const ids = new Set()
  const newId = () => {
    let id
    do id = rng.hex8()
    while (ids.has(id))
    ids.add(id)
    return id
  }
  const lines = [JSON.stringify({ type: 'session', version: 3, id: sessionId, timestamp: iso(clock), cwd: spec.cwd })]
  /** Appends one entry (Pi's order: type, id, parentId, timestamp, then the kind's fields). */
  const push = (type, fields, ms = clock) => {
    const id = newId()
    lines.push(JSON.stringify({ type, id, parentId, timestamp: iso(ms), ...fields }))
    parentId = id
  }
  push('model_change', { provider: model.provider, modelId: model.model })
  push('thinking_level_change', { thinkingLevel: 'off' })
  const messages = []
  /** Calls of the last assistant message not answered yet, in order. */
  let pending = []
  spec.turns.forEach((turn, k) => {
    // The first turn sits at the session's start; later ones a minute apart unless given.
    clock = turn.ms ?? (k === 0 ? clock : clock + MINUTE)
    /** @type {Record<string, any>} */
    let message
    if (turn.role === 'user') {
      message = { role: 'user', content: turn.text, timestamp: clock }
    } else if (turn.role === 'assistant') {
      const calls = (turn.calls ?? []).map((c) => ({ type: 'toolCall', id: model.callId(rng), name: c.name, arguments: c.arguments }))
      const content = [...(turn.text ? [{ type: 'text', text: turn.text }] : []), ...calls]
      message = { role: 'assistant', content, api: model.api, provider: model.provider, model: model.model, usage: usage(rng, model), stopReason: calls.length ? 'toolUse' : 'stop', timestamp: clock }
      if (model.provider !== 'google') message.responseId = `resp_${rng.hex8()}${rng.hex8()}`
      pending = calls
    } else {
      const call = pending.shift()
      if (!call) throw new Error(`${spec.key}: turn ${k} is a tool result with no pending tool call`)
      message = { role: 'toolResult', toolCallId: call.id, toolName: call.name, content: [{ type: 'text', text: turn.text }], details: undefined, isError: Boolean(turn.isError), timestamp: clock }
    }
    messages.push(message)
    push('message', { message })
  })
  return { sessionId, lines, messages, lastMs: clock }
}

/**
 * Writes every session of `set` under `<agentDir>/sessions/--<cwd>--/`, each file's mtime its last entry's time
 * (the engine's hot tier is the newest `hotSessions` by mtime), nudged to distinct whole seconds so the order is
 * unambiguous. Returns the sessions newest first, with `rank` (0 = newest) and `hot` (rank < hotSessions).
 * @returns {WrittenSession[]}
 */
export function writeSet(/** @type {QualitySet} */ set, /** @type {string} */ agentDir, hotSessions = 50) {
  const written = []
  for (const spec of set.sessions) {
    const { sessionId, lines, messages, lastMs } = renderSession(spec)
    const dir = path.join(agentDir, 'sessions', encodeCwd(spec.cwd))
    mkdirSync(dir, { recursive: true })
    const file = path.join(dir, `${iso(spec.startMs).replace(/[:.]/g, '-')}_${sessionId}.jsonl`)
    writeFileSync(file, lines.join('\n') + '\n')
    written.push({ key: spec.key, cwd: spec.cwd, file, sessionId, mtimeMs: lastMs, messages })
  }
  // Oldest first, then distinct seconds upwards (ties broken by key, so the result is deterministic).
  written.sort((a, b) => a.mtimeMs - b.mtimeMs || (a.key < b.key ? -1 : 1))
  let last = -Infinity
  for (const w of written) {
    w.mtimeMs = Math.max(Math.floor(w.mtimeMs / 1000) * 1000, last + 1000)
    last = w.mtimeMs
    utimesSync(w.file, new Date(w.mtimeMs), new Date(w.mtimeMs))
  }
  written.reverse()
  written.forEach((w, rank) => Object.assign(w, { rank, hot: rank < hotSessions }))
  return written
}
