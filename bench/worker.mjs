// One measurement in a fresh process (cold build or first recall), so its
// timing and peak RSS are not those of the harness.
import { MemoryEngine } from 'pi-fabric-memory/native'

const [mode, agentDir, cwd, indexDir, argsJson] = process.argv.slice(2)
const engine = new MemoryEngine({ agentDir, cwd, config: { indexDir, maxSessions: 100000 } })
const started = performance.now()
const result = mode === 'build' ? await engine.sessions({ scope: 'global', limit: 1 }) : await engine.recall(JSON.parse(argsJson))
const ms = performance.now() - started
process.stdout.write(JSON.stringify({ ms, maxRssKB: process.resourceUsage().maxRSS, coverage: result.coverage, total: 'total' in result ? result.total : undefined }))
