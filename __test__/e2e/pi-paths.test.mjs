// The one JS copy of Pi's session-dir name for a cwd, held to Pi's own function on both Pi lines.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { encodeCwd } from '../../dist/extension/shared/pi-paths.mjs'
import { PI_LINES } from './pi-session.mjs'

// Resolved cwds, as Pi's ctx.cwd and session headers hold them (Pi resolves `~`, `.` and `//` before encoding).
const CWDS = ['/home/u/proj', '/home/u/my.proj', '/home/u/with space', '/srv/a:b/c\\d', '/']

for (const line of PI_LINES) {
  test(`encodeCwd names each cwd's session dir as Pi ${line.label} does`, async () => {
    const { SessionManager } = await import(line.sdk)
    const agentDir = mkdtempSync(join(tmpdir(), 'pfm-paths-')) // Pi creates the dir it names
    const saved = process.env.PI_CODING_AGENT_DIR
    process.env.PI_CODING_AGENT_DIR = agentDir
    try {
      for (const cwd of CWDS) {
        const dir = SessionManager.create(cwd).getSessionDir()
        assert.equal(join(agentDir, 'sessions', encodeCwd(cwd)), dir, cwd)
      }
    } finally {
      if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR
      else process.env.PI_CODING_AGENT_DIR = saved
      rmSync(agentDir, { recursive: true, force: true })
    }
  })
}
