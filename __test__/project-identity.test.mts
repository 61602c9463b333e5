/**
 * `projectIdentity` through the package: a real `git init` / `git worktree add`
 * (git is on PATH here and on CI), the environment's key over the setting's,
 * and invalid keys thrown as `invalid_argument`.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { projectIdentity } from 'pi-fabric-memory'

const ENV = 'PI_FABRIC_MEMORY_PROJECT_KEY'
const root = mkdtempSync(join(tmpdir(), 'pfm-identity-'))
after(() => rmSync(root, { recursive: true, force: true }))

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], { cwd, stdio: 'pipe' })

function hasGit(): boolean {
  try {
    execFileSync('git', ['--version'], { stdio: 'pipe' })
    return true
  } catch {
    return false
  }
}

describe('projectIdentity', () => {
  test('a real git worktree and its main checkout are one project, by common dir and then by remote', { skip: hasGit() ? false : 'git is not on PATH' }, () => {
    const main = join(root, 'Shop')
    mkdirSync(main)
    git(main, 'init', '-q')
    git(main, 'commit', '-q', '--allow-empty', '-m', 'init')
    git(main, 'worktree', 'add', '-q', '-b', 'feature', join(root, 'shop-feature'))
    const [a, b] = [projectIdentity(main), projectIdentity(join(root, 'shop-feature'))]
    assert.deepEqual({ ...b }, { ...a })
    assert.equal(a.source, 'commonDir')
    assert.equal(a.name, 'shop')
    assert.match(a.key, /^v1:[0-9a-f]{32}$/)
    assert.equal(a.dirName, `shop-${a.key.slice(3, 19)}`)
    git(main, 'remote', 'add', 'origin', 'git@github.com:acme/shop.git')
    const clone = join(root, 'clone')
    mkdirSync(clone)
    git(clone, 'init', '-q')
    git(clone, 'remote', 'add', 'origin', 'https://github.com/Acme/Shop')
    const [c, d, e] = [projectIdentity(main), projectIdentity(join(root, 'shop-feature')), projectIdentity(clone)]
    assert.deepEqual([{ ...d }, { ...e }], [{ ...c }, { ...c }])
    assert.deepEqual([c.source, c.evidence, c.name], ['remote', 'github.com/acme/shop', 'shop'])
    assert.notEqual(c.key, a.key)
  })

  test('outside a repository the cwd is the project; a relative cwd is the process\'s', () => {
    const dir = join(root, 'notes')
    mkdirSync(dir)
    const identity = projectIdentity(dir)
    assert.deepEqual([identity.source, identity.evidence, identity.name, identity.fallback], ['cwd', dir, 'notes', undefined])
    const before = process.cwd()
    process.chdir(dir)
    try {
      assert.equal(projectIdentity('.').evidence, dir)
    } finally {
      process.chdir(before)
    }
    assert.equal(projectIdentity(join(root, 'missing')).fallback, 'cwd_missing')
  })

  test('the explicit key: the environment wins over projectKey; invalid keys throw invalid_argument', () => {
    const dir = join(root, 'notes2')
    mkdirSync(dir)
    const bySetting = projectIdentity(dir, { projectKey: 'team' })
    assert.deepEqual([bySetting.source, bySetting.name], ['explicit', 'team'])
    process.env[ENV] = 'other'
    try {
      const byEnv = projectIdentity(dir, { projectKey: 'team' })
      assert.deepEqual([byEnv.source, byEnv.evidence], ['explicit', 'other'])
      process.env[ENV] = '\u0007'
      assert.throws(() => projectIdentity(dir), (e: Error & { code?: string }) => e.code === 'InvalidArg' && /PI_FABRIC_MEMORY_PROJECT_KEY must be/.test(e.message))
    } finally {
      delete process.env[ENV]
    }
    assert.throws(() => projectIdentity(dir, { projectKey: '  ' }), /projectKey must be a non-empty name/)
  })
})
