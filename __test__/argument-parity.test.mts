// The tool schemas the model sees and the argument tables the addon enforces
// name the same keys. A schema key the addon lacks is an `invalid_argument`
// the model cannot avoid; an addon key the schema lacks is one it never
// learns. The addon's own answer to an unknown key lists what it accepts,
// so the Rust side is read from the running addon, not from its source.
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { MemoryEngine } from 'pi-fabric-memory'
import { createMemory, liveBranch } from '../extension/recall/create-memory.mjs'
import { CARRIED_KEYS, ExpandParameters, PackParameters, RecallParameters, SessionsParameters } from '../extension/recall/schemas.mjs'
import { tempAgent } from './helpers.mjs'

const PROBE = 'argumentParityProbe'
const agent = tempAgent()
after(() => agent.cleanup())
// The tools call the shim's `memory` with their arguments unchanged; the live branch goes to the addon.
const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })
const engine = new MemoryEngine({ agentDir: agent.agentDir, cwd: agent.cwd })

type Schema = { properties?: Record<string, Schema> }
const keys = (schema: Schema) => Object.keys(schema.properties ?? {}).sort()
const [recall, expand, sessions] = [RecallParameters, ExpandParameters, SessionsParameters] as Schema[]

/** The keys the addon accepts where `call` puts the probe key. */
async function accepted(call: () => unknown): Promise<string[]> {
  const error = await (async () => call())().then(
    () => assert.fail('the addon accepted an unknown key'),
    (e: Error) => e,
  )
  const listed = new RegExp(`unknown argument "${PROBE}" \\(expected one of: (.*)\\)$`).exec(error.message)
  assert.ok(listed, `the addon names what it accepts: ${error.message}`)
  return listed[1].split(', ').sort()
}

const probe = { [PROBE]: 1 }
const live = { sessionFile: agent.write('live.jsonl', ''), leafId: null, branchIds: [] }

const tables: [string, Schema, () => unknown][] = [
  ['memory_recall', recall, () => memory.recall(probe as never)],
  ['memory_recall entryRange', recall.properties!.entryRange, () => memory.recall({ entryRange: probe } as never)],
  ['memory_expand', expand, () => memory.expand(probe as never)],
  ['memory_expand entryRange', expand.properties!.entryRange, () => memory.expand({ entryRange: probe } as never)],
  ['memory_sessions', sessions, () => memory.sessions(probe as never)],
  ['memory_pack', PackParameters as Schema, () => memory.pack(probe as never)],
]

/** The keys a tool's follow and next calls carry without declaring them. */
const carried = (name: string) => [...((CARRIED_KEYS as Record<string, readonly string[]>)[name] ?? [])]
const ownKeys = (name: string, schema: Schema) =>
  name.includes(' ') ? keys(schema) : [...keys(schema), ...carried(name)].sort()

for (const [name, schema, call] of tables) {
  test(`${name}: the schema's keys (plus the carried binding keys) are the addon's`, async () => {
    assert.ok(keys(schema).length > 0, `${name} has properties`)
    assert.deepEqual(ownKeys(name, schema), await accepted(call))
  })
}

test("live: the shim's live branch has the keys the addon reads", async () => {
  const manager = { getSessionFile: () => live.sessionFile, getLeafId: () => 'leaf', getBranch: () => [{ id: 'leaf' }] }
  const sent = Object.keys(liveBranch(manager)!).sort()
  assert.deepEqual(sent, await accepted(() => engine.sessions({}, { ...live, ...probe } as never)))
})
