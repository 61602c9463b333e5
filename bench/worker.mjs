// One measurement in a fresh process, so its timing and peak RSS are not those
// of the harness:
//   build   calls until every session is current (each call is bounded by the
//           work budgets); reports the calls, the time and the source bytes
//           actually parsed (from the addon's progress), and peak RSS
//   recall  the first recall with valid caches, then `repeat` more (warm); peak RSS
//   import  how long importing `args.specifier` takes (nothing else runs)
const [mode, agentDir, cwd, indexDir, argsJson] = process.argv.slice(2)
const args = JSON.parse(argsJson ?? '{}')

/** @param {Record<string, unknown>} result */
const report = (result) => {
  const usage = process.resourceUsage()
  // CPU time over the process's life (µs → ms): a build's MB per CPU-second is its speed per core.
  process.stdout.write(JSON.stringify({ ...result, maxRssKB: usage.maxRSS, cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000 }))
}

if (mode === 'import') {
  const started = performance.now()
  await import(args.specifier)
  report({ ms: performance.now() - started })
} else {
  const { MemoryEngine } = await import('pi-fabric-memory/native')
  const engine = new MemoryEngine({ agentDir, cwd, config: { indexDir, maxSessions: 100000, ...args.config } })
  if (mode === 'build') {
    const calls = []
    const started = performance.now()
    for (;;) {
      let bytes = 0
      const callStarted = performance.now()
      // The plan's bytes: every planned build is parsed whole (budgets cut plans, never builds).
      const page = await engine.sessions({ scope: 'global', limit: 1 }, undefined, (p) => void (bytes = Math.max(bytes, p.bytesToIndex)))
      await new Promise((resolve) => setImmediate(resolve)) // progress reports queued behind the result
      calls.push({ ms: performance.now() - callStarted, bytes, stale: page.coverage.staleSessions })
      if (page.coverage.staleSessions === 0 || calls.length >= 1000) {
        report({ ms: performance.now() - started, bytes: calls.reduce((n, c) => n + c.bytes, 0), calls, coverage: page.coverage })
        break
      }
    }
  } else {
    const started = performance.now()
    const first = await engine.recall(args.query)
    const ms = performance.now() - started
    const warm = []
    for (let i = 0; i < (args.repeat ?? 0); i++) {
      const t = performance.now()
      await engine.recall(args.query)
      warm.push(performance.now() - t)
    }
    report({ ms, warm, coverage: first.coverage, total: first.total })
  }
}
