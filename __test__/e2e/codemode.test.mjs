// End-to-end: Pi 1.6.0's codemode (the guest the recall contract was written
// for) driving the memory tools from a real script in its QuickJS sandbox.
// Pi 0.80 has no codemode; its side of the same tools is covered by
// pi-extension.test.mjs.
//
// An earlier real Pi session holds a user message of 25,000+ characters. In a
// new session the faux model runs one codemode script that recalls it,
// follows the first hit and every `next` with the walk loop that
// describeNamespace("memory") hands out, and returns the reassembled text:
// byte-identical to what was written. memory_read and memory_recall resolve
// to objects (not JSON text), and a contract error resolves as data.
//
// Run (Node >= 22.19): "$PI_NODE22" --test __test__/e2e/codemode.test.mjs
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { fauxModel, openSession, teardown, tempPiHome } from './faux.mjs'

const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
// What a user who turned codemode on has: Pi's default tools plus codemode (no allowlist), the five declared
// memory tools active; memory_sessions, memory_pack, memory_read and memory_apply have codemode exposure (shared/exposure.mts)
// and are reached from the script only.
const TOOLS = ['+codemode']

/** 25,000+ characters of distinct numbered words, so any lost or repeated chunk changes the text. */
const LONG = `bluefinch report: ${Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`).join(' ')} — end of report ✓`

test('codemode: recall → follow → next until null reassembles a > 20,000-char entry; tools resolve to objects', { timeout: 60_000 }, async () => {
  const sdk = await import('pi-coding-agent-1x')
  const ai = await import('pi-ai-1x')
  const { WALK_SOURCE } = await import(join(PACKAGE_DIR, 'dist', 'extension', 'recall', 'namespace.mjs'))
  const { createCodemodeExtension, SessionManager, SettingsManager } = sdk
  const { fauxAssistantMessage, fauxToolCall, fauxText } = ai
  assert.ok(LONG.length > 20_000)

  const { root, agentDir, cwd, savedEnv } = tempPiHome('pfm-codemode-')
  writeFileSync(join(agentDir, 'memories', 'MEMORY.md'), 'the deploy host is kestrel')
  const sessions = []
  try {
    const { faux, modelRuntime, model } = await fauxModel(sdk, ai)
    const settingsManager = SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: false } })
    // Pi's default session dir for the cwd, under PI_CODING_AGENT_DIR.
    const open = async () => {
      const factories = [{ name: 'codemode', factory: createCodemodeExtension({ models: false }) }]
      const session = await openSession(sdk, { packageDir: PACKAGE_DIR, cwd, agentDir, settingsManager, modelRuntime, model, sessionManager: SessionManager.create(cwd), tools: TOOLS, factories })
      sessions.push(session)
      return session
    }

    // An earlier session: the long entry, written by real Pi.
    const earlier = await open()
    faux.setResponses([() => fauxAssistantMessage(fauxText('noted'))])
    await earlier.prompt(LONG)
    assert.equal(faux.getPendingResponseCount(), 0)

    // The script: what a model writes after reading describeNamespace("memory").
    const script = `// @options: {"max_output_tokens": 40000}
${WALK_SOURCE}
const ns = await describeNamespace('memory')
const read = await tools.memory_read({ target: 'memory' })
const listed = await tools.memory_sessions({ scope: 'global' })
const applied = await tools.memory_apply({ target: 'user', operations: [{ action: 'add', content: 'prefers tabs' }] })
const page = await tools.memory_recall({ query: 'bluefinch', role: 'user' })
const hit = page.hits[0]
let whole = null
let pages = 0
const counting = { ...hit.follow.args }
const walked = await walk(counting, (entry) => { if (entry.index === hit.index) whole = entry.text })
let p = await tools[hit.follow.tool](hit.follow.args)
for (pages = 1; p.next; pages++) p = await tools[p.next.tool](p.next.args)
const missing = await tools.memory_expand({ session: 'no-such-session', indices: [0] })
return {
  namespace: { name: ns.name, hasWalk: ns.instructions.includes(${JSON.stringify(WALK_SOURCE.split('\n')[0])}), tools: ns.tools },
  typeofRead: typeof read, readEntries: read.entries, listedSessions: listed.sessions.length, applied: applied.entries,
  typeofRecall: typeof page, total: page.total, followTool: hit.follow.tool, followRef: hit.follow.ref, hitIndex: hit.index,
  walked, pages, wholeLength: whole && whole.length, whole,
  missing: { typeofMissing: typeof missing, code: missing.error && missing.error.code },
}`
    const session = await open()
    let seen
    faux.setResponses([
      () => fauxAssistantMessage(fauxToolCall('codemode', { code: script }, { id: 'cm_1' }), { stopReason: 'toolUse' }),
      (ctx) => {
        seen = ctx.messages.find((m) => m.role === 'toolResult' && m.toolCallId === 'cm_1')
        return fauxAssistantMessage(fauxText('done'))
      },
    ])
    await session.prompt('Find the earlier report and give me all of it.')
    assert.equal(faux.getPendingResponseCount(), 0)

    const text = seen.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
    assert.equal(seen.isError, false, text.slice(0, 2000))
    assert.match(text, /^Script completed/)
    const json = text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1)
    const out = JSON.parse(json)
    assert.deepEqual([out.namespace.name, out.namespace.hasWalk], ['memory', true])
    assert.deepEqual([...out.namespace.tools].sort(), ['memory_add', 'memory_apply', 'memory_expand', 'memory_pack', 'memory_read', 'memory_recall', 'memory_remove', 'memory_replace', 'memory_sessions'])
    assert.equal(out.typeofRead, 'object')
    assert.deepEqual(out.readEntries, ['the deploy host is kestrel'])
    assert.ok(out.listedSessions >= 1, 'memory_sessions (codemode exposure) answers a script')
    assert.deepEqual(out.applied, ['prefers tabs'], 'memory_apply (codemode exposure) answers a script')
    assert.equal(out.typeofRecall, 'object')
    assert.ok(out.total >= 1)
    assert.deepEqual([out.followRef, out.followTool], ['memory.expand', 'memory_expand'])
    assert.ok(out.pages >= 2, `a ${LONG.length}-char entry needs several pages, got ${out.pages}`)
    assert.deepEqual(out.walked, { visited: 1, stopped: false })
    assert.equal(out.wholeLength, LONG.length)
    assert.equal(out.whole, LONG, 'the reassembled text is the entry, byte for byte')
    assert.deepEqual(out.missing, { typeofMissing: 'object', code: 'session_not_found' })
  } finally {
    teardown(sessions, savedEnv, root)
  }
})
