// End-to-end: forgetting a session in real Pi 1.6.0. Two earlier sessions,
// written by real Pi, mention "zanzibar"; one also holds a secret. In a new
// session `/memory forget <id>` forgets that one: the faux model's recall,
// sessions, expand and pack calls never surface it, no file of the index dir
// holds its words or is named for it, Pi's JSONL is byte-for-byte unchanged,
// `/memory status` lists it, and `/memory unforget` brings it back. A second
// case forgets one entry of a session (`/memory forget <id> <entryId>`): its
// words leave every answer and the index dir, the session's other entries stay.
//
// Run (Node >= 22.19): "$PI_NODE22" --test __test__/e2e/forget.test.mjs
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const { inspectCacheRecord } = createRequire(import.meta.url)(join(PACKAGE_DIR, 'binding.cjs'))

/** A file of the index dir as text to look for words in: its bytes, and a record's decoded JSON (stamps are BigInts). */
const readable = (file) =>
  readFileSync(file, 'latin1') + JSON.stringify(inspectCacheRecord(file), (_, value) => (typeof value === 'bigint' ? String(value) : value))
const SECRET = 'qx7hunter2zz'
/** Only in the forgotten session, never in a query: what the index dir must not hold once it is forgotten. */
const KEEPER = 'marmoset9keeper'

/** A temp Pi 1.6.0 home with every memory tool declared (so the faux model calls them directly) and `open()` for a
 * new session there with the extension bound; `teardown(sessions, savedEnv, root)` cleans up. */
async function piWorld(prefix) {
  const sdk = await import('pi-coding-agent-1x')
  const ai = await import('pi-ai-1x')
  const { SessionManager, SettingsManager } = sdk
  const { root, agentDir, cwd, savedEnv } = tempPiHome(prefix)
  const settingsFile = join(agentDir, 'settings.json')
  const settings = JSON.parse(readFileSync(settingsFile, 'utf8'))
  writeFileSync(settingsFile, JSON.stringify({ ...settings, memory: { ...settings.memory, tools: 'all' } }))
  const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
  const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
  const sessions = []
  const open = async () => {
    const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager: SessionManager.create(cwd) })
    sessions.push(session)
    const notes = []
    await session.bindExtensions({ uiContext: { notify: (text) => notes.push(text), setStatus: () => {} } })
    return { session, notes }
  }
  const { fauxAssistantMessage, fauxToolCall, fauxText } = ai
  let calls = 0
  /** Runs one faux turn in `host` that calls `tool` with `args` and returns the tool result's text. */
  const call = async (host, tool, args) => {
    let result
    const id = `c${++calls}`
    faux.setResponses([
      () => fauxAssistantMessage(fauxToolCall(tool, args, { id }), { stopReason: 'toolUse' }),
      (ctx) => {
        const message = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === id)
        result = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
        return fauxAssistantMessage(fauxText('ok'))
      },
    ])
    await host.session.prompt('look it up')
    return result
  }
  const indexDir = join(agentDir, 'fabric', 'memory-index')
  /** The index dir's files that hold KEEPER's bytes (a cold record's body is compressed: decoded, it is looked in too). */
  const indexHolds = () => readdirSync(indexDir).filter((name) => readable(join(indexDir, name)).includes(KEEPER))
  /** Before a forget: the secret is found (through the host API: a tool call would copy it into this session), and
   * the index holds its words (so the checks after the forget can fail). */
  const checkBefore = async () => {
    const { createMemory } = await import(join(PACKAGE_DIR, 'dist', 'extension', 'recall', 'create-memory.mjs'))
    assert.equal((await createMemory({ agentDir, cwd }).recall({ query: SECRET, scope: 'global' })).total, 1)
    assert.ok(indexHolds().length > 0, 'the index holds the secret before the forget (the check below can fail)')
  }
  return { fauxAssistantMessage, fauxText, faux, agentDir, indexDir, open, call, indexHolds, checkBefore, sessions, root, savedEnv }
}

test('a forgotten session is absent from every answer and its records are gone from the index dir', { timeout: 90_000 }, async () => {
  const world = await piWorld('pfm-forget-')
  const { fauxAssistantMessage, fauxText, faux, indexDir, open, indexHolds, sessions, root, savedEnv } = world
  try {
    const earlier = []
    for (const answer of [`The zanzibar vault password is ${SECRET}, kept by ${KEEPER}.`, 'The zanzibar deploy runs at noon.']) {
      const { session } = await open()
      faux.setResponses([() => fauxAssistantMessage(fauxText(answer))])
      await session.prompt('what about zanzibar?')
      earlier.push({ id: session.sessionId, file: session.sessionManager.getSessionFile() })
    }
    const [secret, other] = earlier
    const secretBytes = readFileSync(secret.file)

    const host = await open()
    const call = (tool, args) => world.call(host, tool, args)
    await world.checkBefore()

    await host.session.prompt(`/memory forget ${secret.id.slice(0, 13)}`)
    assert.match(host.notes.at(-1), /^Forgot /, host.notes.at(-1))

    const recalled = await call('memory_recall', { query: SECRET, scope: 'global' })
    assert.doesNotMatch(recalled, new RegExp(SECRET))
    const zanzibar = await call('memory_recall', { query: 'zanzibar', scope: 'global' })
    assert.doesNotMatch(zanzibar, new RegExp(secret.id.slice(0, 13)))
    assert.match(zanzibar, new RegExp(other.id.slice(0, 13)))
    const listed = await call('memory_sessions', { scope: 'global' })
    assert.doesNotMatch(listed, new RegExp(secret.id.slice(0, 13)))
    assert.match(await call('memory_expand', { session: secret.id, indices: [1] }), /session_forgotten/)
    const pack = await call('memory_pack', { query: 'zanzibar', scope: 'global' })
    assert.doesNotMatch(pack, new RegExp(SECRET))
    assert.doesNotMatch(pack, new RegExp(secret.id))

    assert.deepEqual(indexHolds(), [], 'no index file holds the forgotten session\'s words')
    const base = readdirSync(indexDir).filter((name) => name.includes(secret.id))
    assert.deepEqual(base, [], 'no record is named for it')
    assert.deepEqual(readFileSync(secret.file), secretBytes, "Pi's file is untouched")
    await host.session.prompt('/memory status')
    assert.match(host.notes.at(-1), new RegExp(`Forgotten sessions \\(1 session; recall never surfaces them\\):\\n  ${secret.id.slice(0, 13)}`))

    await host.session.prompt(`/memory unforget ${secret.id}`)
    assert.match(host.notes.at(-1), /^Remembered again/)
    assert.match(await call('memory_recall', { query: SECRET, scope: 'global' }), new RegExp(SECRET))
  } finally {
    teardown(sessions, savedEnv, root)
  }
})

test('a forgotten entry is absent from every answer and from the index dir while its session\'s other entries stay found', { timeout: 90_000 }, async () => {
  const world = await piWorld('pfm-forget-entry-')
  const { fauxAssistantMessage, fauxText, faux, open, indexHolds, sessions, root, savedEnv } = world
  try {
    // One earlier session, two turns: the first answer holds the secret, the second does not.
    const { session: earlier } = await open()
    for (const answer of [`The zanzibar vault password is ${SECRET}, kept by ${KEEPER}.`, 'The zanzibar deploy runs at noon.']) {
      faux.setResponses([() => fauxAssistantMessage(fauxText(answer))])
      await earlier.prompt('what about zanzibar?')
    }
    const id = earlier.sessionId
    const file = earlier.sessionManager.getSessionFile()
    const secretEntry = earlier.sessionManager.getEntries().find((e) => e.type === 'message' && JSON.stringify(e.message.content).includes(SECRET))
    assert.ok(secretEntry, 'the secret answer is an entry of the session')
    const piBytes = readFileSync(file)

    const host = await open()
    const call = (tool, args) => world.call(host, tool, args)
    await world.checkBefore()

    await host.session.prompt(`/memory forget ${id.slice(0, 13)} ${secretEntry.id}`)
    assert.match(host.notes.at(-1), new RegExp(`^Forgot ${id.slice(0, 13)}… entry ${secretEntry.id} `), host.notes.at(-1))

    assert.doesNotMatch(await call('memory_recall', { query: SECRET, scope: 'global' }), new RegExp(SECRET))
    const noon = await call('memory_recall', { query: 'noon', scope: 'global' })
    assert.match(noon, new RegExp(id.slice(0, 13)), 'the session\'s other entries are still found')
    assert.match(noon, /noon/)
    assert.match(await call('memory_expand', { session: id, entryIds: [secretEntry.id] }), /entry_forgotten/)
    const pack = await call('memory_pack', { query: 'zanzibar', scope: 'global' })
    assert.doesNotMatch(pack, new RegExp(SECRET))
    assert.match(pack, /noon/)

    assert.deepEqual(indexHolds(), [], 'no index file holds the forgotten entry\'s words')
    assert.deepEqual(readFileSync(file), piBytes, "Pi's file is untouched")
    await host.session.prompt('/memory status')
    assert.match(host.notes.at(-1), new RegExp(`Forgotten sessions \\(0 sessions, 1 entry; recall never surfaces them\\):\\n  ${id.slice(0, 13)}… entry ${secretEntry.id}`))

    await host.session.prompt(`/memory unforget ${id} ${secretEntry.id}`)
    assert.match(host.notes.at(-1), /^Remembered again/)
    assert.match(await call('memory_recall', { query: SECRET, scope: 'global' }), new RegExp(SECRET))
  } finally {
    teardown(sessions, savedEnv, root)
  }
})
