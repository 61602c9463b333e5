// What Pi reads from the nine tools' definitions: one shared `memory`
// namespace, output schemas on the recall tools, and enumerated parameters as
// plain `{type: "string", enum}` schemas (a union of literals breaks
// Google-family models, Pi's extensions.md). The real-Pi codemode path is in
// e2e/codemode.test.mjs.
import assert from 'node:assert/strict'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { DECLARED_TOOLS } from '../extension/shared/exposure.mjs'
import piFabricMemory, { MEMORY_NAMESPACE } from '../extension/index.mjs'
import { agentDirForTests } from './helpers.mjs'

const agent = agentDirForTests('pfm-schemas-')

function registeredTools(): any[] {
  const tools: any[] = []
  const pi = { registerTool: (tool: any) => tools.push(tool), registerCommand: () => {}, on: () => {}, appendEntry: () => {} }
  piFabricMemory(pi as never)
  return tools
}

/** What one declaration costs per request: name, description and parameter schema as sent. */
const declared = (tool: any) => tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length

const ENUMS: Record<string, Record<string, string[]>> = {
  memory_recall: { branches: ['active', 'all'], queryMode: ['literal', 'phrase', 'regex'], queryMatch: ['any', 'all'], outcome: ['succeeded', 'failed', 'aborted', 'timed_out'] },
  memory_expand: { branches: ['active', 'all'] },
  memory_sessions: { branches: ['active', 'all'] },
  memory_pack: { branches: ['active', 'all'], queryMode: ['literal', 'phrase', 'regex'], queryMatch: ['any', 'all'], outcome: ['succeeded', 'failed', 'aborted', 'timed_out'] },
  memory_add: { target: ['memory', 'user'] },
  memory_replace: { target: ['memory', 'user'] },
  memory_remove: { target: ['memory', 'user'] },
  memory_read: { target: ['memory', 'user'] },
  memory_apply: { target: ['memory', 'user'] },
}

test('nine tools, one namespace, output schemas, plain string enums', () => {
  const tools = registeredTools()
  assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(ENUMS).sort())
  for (const tool of tools) {
    assert.equal(tool.namespace, MEMORY_NAMESPACE, `${tool.name} namespace`)
    assert.equal(tool.exposure, DECLARED_TOOLS.includes(tool.name) ? undefined : 'codemode', `${tool.name} exposure`)
    assert.equal(tool.outputSchema?.type, 'object', `${tool.name} outputSchema`)
    const parameters = JSON.parse(JSON.stringify(tool.parameters))
    for (const [key, values] of Object.entries(ENUMS[tool.name])) {
      assert.deepEqual({ type: parameters.properties[key].type, enum: parameters.properties[key].enum }, { type: 'string', enum: values }, `${tool.name}.${key}`)
    }
    assert.ok(!JSON.stringify(parameters).includes('"const"'), `${tool.name}: no literal unions`)
  }
  assert.match(MEMORY_NAMESPACE.instructions, /async function walk\(args, visit\)/)
})

// The prompt-footprint goal of issue 32: what the default exposure declares
// every turn stays within 4,000 characters (docs/in-pi.md "Prompt footprint").
test('the declared tools fit in 4,000 characters; the others are codemode, reachable by scripts and tool_search', () => {
  const tools = registeredTools()
  const direct = tools.filter((t) => (t.exposure ?? 'direct') === 'direct')
  assert.deepEqual(direct.map((t) => t.name).sort(), [...DECLARED_TOOLS].sort())
  const total = direct.reduce((sum, t) => sum + declared(t), 0)
  assert.ok(total <= 4000, `declared: ${total} characters`)
})

test('memory.tools "all" declares all nine', () => {
  writeFileSync(join(agent, 'settings.json'), JSON.stringify({ memory: { tools: 'all' } }))
  try {
    assert.deepEqual(registeredTools().filter((t) => t.exposure !== undefined), [])
  } finally {
    rmSync(join(agent, 'settings.json'))
  }
})
