// memory.pack through the host API, the Pi tool and the CLI: cited, verified
// excerpts within the budget, the same pack every time.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { after, test } from 'node:test'
import { join } from 'node:path'
import { createMemory } from '../extension/recall/create-memory.mjs'
import { recallTools } from '../extension/recall/tools.mjs'
import { ROOT, tempAgent } from './helpers.mjs'

const agent = tempAgent()
after(() => agent.cleanup())

function session(id: string, minute: number, turns: [string, string][]): void {
  const lines = [JSON.stringify({ type: 'session', version: 3, id, cwd: agent.cwd, timestamp: '2026-01-01T00:00:00.000Z' })]
  let parent: string | null = null
  turns.forEach(([role, text], i) => {
    const entryId = `${id}-${i}`
    const message = role === 'user' ? { role, content: text } : { role, content: [{ type: 'text', text }] }
    lines.push(JSON.stringify({ type: 'message', id: entryId, parentId: parent, timestamp: `2026-01-01T00:${String(minute).padStart(2, '0')}:0${i}.000Z`, message }))
    parent = entryId
  })
  agent.write(`${id}.jsonl`, lines.join('\n') + '\n')
}

session('a1', 1, [['user', 'where does the heddlework config live?'], ['assistant', 'The heddlework config lives in /etc/heddlework/main.toml.']])
session('b2', 2, [['user', 'heddlework failed to start'], ['assistant', 'heddlework needs port 7070 free; the old daemon held it.']])
session('c3', 3, [['user', 'lunch?'], ['assistant', 'noon']])

const memory = createMemory({ agentDir: agent.agentDir, cwd: agent.cwd })

test('memory.pack cites verified excerpts of each matching session within the budget, deterministically', async () => {
  const pack = await memory.pack({ query: 'heddlework', maxTokens: 1000 })
  assert.equal(pack.error, undefined)
  assert.deepEqual(pack.sessions.map((s) => s.sessionId).sort(), ['a1', 'b2'])
  assert.deepEqual(pack.sessions.map((s) => [s.project, s.projectName]), [[agent.cwd, 'proj'], [agent.cwd, 'proj']], 'the cwd and its project')
  assert.ok(pack.tokens <= 1000 && Math.ceil(JSON.stringify(pack).length / 4) === pack.tokens, `${pack.tokens}`)
  for (const citation of pack.sessions.flatMap((s) => s.evidence)) {
    assert.equal(citation.verified, true)
    const page = await memory.tools.call(citation.follow)
    assert.equal((page as { entries: { text: string }[] }).entries[0].text, citation.text)
  }
  assert.deepEqual(await memory.pack({ query: 'heddlework', maxTokens: 1000 }), pack)
})

test('a budget out of bounds rejects with invalid_argument', async () => {
  await assert.rejects(memory.pack({ query: 'heddlework', maxTokens: 100 }), /maxTokens must be between 400 and 7000/)
})

test('the memory_pack tool returns the pack as structured content and its JSON as text', async () => {
  const tool = recallTools(() => memory).find((t) => t.name === 'memory_pack')!
  const result = (await tool.execute('call-1', { query: 'heddlework' } as never, undefined, undefined, undefined as never)) as unknown as {
    content: { text: string }[]
    structuredContent: { sessions: unknown[] }
  }
  assert.equal(result.structuredContent.sessions.length, 2)
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent)
})

test('the CLI prints a pack for people and as JSON', () => {
  const cli = join(ROOT, 'dist/extension/cli.mjs')
  const run = (...args: string[]) => spawnSync(process.execPath, [cli, 'pack', 'heddlework', '--agent-dir', agent.agentDir, '--cwd', agent.cwd, ...args], { encoding: 'utf8' })
  const human = run('--no-color')
  assert.equal(human.status, 0, human.stderr)
  assert.match(human.stdout, /#1 match · verified/)
  assert.match(human.stdout, /excerpts from 2 sessions · \d+\/2000 tokens/)
  const json = run('--json', '--max-tokens', '600')
  assert.equal(json.status, 0, json.stderr)
  assert.ok(JSON.parse(json.stdout).tokens <= 600)
})
