// Text the coding sessions are made of: project files, test and lint runs, logs, diffs and the assistant's prose.
// Everything is a pure function of its arguments and the PRNG it is handed.
import { Rng, hash32 } from '../corpus.mjs'

/** @typedef {import('./coding-projects.mjs').Project} Project */

const CAP = (s) => s.charAt(0).toUpperCase() + s.slice(1)
const words = (noun) => noun.toLowerCase().replace(/[^a-z0-9 ]/g, '').split(' ').filter(Boolean)
/** "presigned URL" → presignedUrl / presigned_url, as the project's language names a variable. */
export const varName = (P, noun) => (P.lang === 'ts' || P.lang === 'go' ? words(noun).map((w, i) => (i ? CAP(w) : w)).join('') : words(noun).join('_'))
export const fill = (template, slots) => template.replace(/\{(\w+)\}/g, (_, k) => (slots[k] === undefined ? `{${k}}` : String(slots[k])))

/** Slots for a sentence about project P: nouns, functions, types, files, components, numbers. */
export function slots(rng, P) {
  const [noun, noun2] = rng.shuffle([...P.nouns]).slice(0, 2)
  const [fn, fn2] = rng.shuffle([...P.fns]).slice(0, 2)
  return { noun, noun2, fn, fn2, type: rng.pick(P.types), const: rng.pick(P.consts), file: rng.pick(P.files), file2: rng.pick(P.files), test: rng.pick(P.testFiles), component: rng.pick(P.components), dep: rng.pick(P.deps), n: rng.range(2, 9), ms: rng.range(20, 900) }
}

// ---------------------------------------------------------------------------------------------------
// Source files
// ---------------------------------------------------------------------------------------------------

/** One function in P's language whose body is `body` lines (indented by the caller's convention). */
function fnBlock(rng, P, name, body) {
  const s = slots(rng, P)
  const arg = varName(P, s.noun)
  const v = varName(P, s.noun2)
  const doc = `${CAP(rng.pick(['loads', 'checks', 'builds', 'returns', 'resolves', 'updates']))} the ${s.noun} for the ${s.noun2}.`
  const inner = body ?? [
    fill(rng.pick(LINES[P.lang]), { v, arg, fn: s.fn2, type: s.type, const: s.const, noun: s.noun, n: s.n }),
    fill(rng.pick(LINES[P.lang]), { v, arg, fn: s.fn, type: s.type, const: s.const, noun: s.noun2, n: s.ms }),
  ]
  switch (P.lang) {
    case 'ts':
      return [`/** ${doc} */`, `export async function ${name}(${arg}: ${s.type}, opts: Partial<${rng.pick(P.types)}> = {}) {`, `  const ${v} = await ${s.fn2}(${arg}, opts)`, ...inner.map((l) => (l.startsWith(' ') ? l : `  ${l}`)), `  return ${v}`, '}', '']
    case 'rust':
      return [`/// ${doc}`, `pub fn ${name}(${arg}: &${s.type}) -> Result<${rng.pick(P.types)}, Error> {`, `    let ${v} = ${s.fn2}(${arg})?;`, ...inner.map((l) => (l.startsWith(' ') ? l : `    ${l}`)), `    Ok(${v})`, '}', '']
    case 'py':
      return [`def ${name}(${arg}, ${v}=None):`, `    """${doc}"""`, `    ${v} = ${v} or ${s.fn2}(${arg})`, ...inner.map((l) => (l.startsWith(' ') ? l : `    ${l}`)), `    return ${v}`, '']
    default:
      return [`// ${name} ${doc.charAt(0).toLowerCase()}${doc.slice(1)}`, `func ${name}(ctx context.Context, ${arg} *${s.type}) (*${rng.pick(P.types)}, error) {`, `\t${v}, err := ${s.fn2}(ctx, ${arg})`, '\tif err != nil {', `\t\treturn nil, fmt.Errorf("${s.noun}: %w", err)`, '\t}', ...inner.map((l) => (l.startsWith('\t') ? l : `\t${l}`)), `\treturn ${v}, nil`, '}', '']
  }
}

/** Body lines by language: `{v}`, `{arg}`, `{fn}`, `{type}`, `{const}`, `{noun}`, `{n}` are filled in. */
const LINES = {
  ts: ["if (!{v}) throw new Error('{noun} is missing')", "log.debug({ {v} }, '{noun} ready')", 'const limit = Math.min(opts.limit ?? {const}, {n})', 'for (const item of {v}.items ?? []) await {fn}(item)', "metrics.increment('{noun}.{n}')", 'if ({v}.size > {const}) return {fn}({arg})'],
  rust: ['if {v}.is_empty() { return Err(Error::Missing("{noun}")); }', 'tracing::debug!(?{v}, "{noun} ready");', 'let limit = {const}.min({n});', 'for item in {v}.items.iter() { {fn}(item)?; }', 'metrics::counter!("{noun}", {n});'],
  py: ['if not {v}:', '    raise ValueError("{noun} is missing")', 'logger.debug("{noun} ready: %s", {v})', 'limit = min({const}, {n})', 'for item in {v}:', '    {fn}(item)'],
  go: ['if {v} == nil {', '\treturn nil, errMissing', '}', 'log.Debug("{noun} ready", "n", {n})', 'limit := min({const}, {n})'],
}

function header(rng, P) {
  const s = slots(rng, P)
  switch (P.lang) {
    case 'ts':
      return [`import { ${s.fn}, ${s.fn2} } from './${s.fn.toLowerCase()}'`, `import type { ${s.type} } from '../types'`, `import { log, metrics } from '../observability'`, '', `export const ${s.const} = ${s.ms}`, '']
    case 'rust':
      return [`use crate::{${s.fn}, ${s.fn2}, Error};`, `use crate::model::${s.type};`, '', `pub const ${s.const}: usize = ${s.ms};`, '']
    case 'py':
      return ['from __future__ import annotations', '', 'import logging', '', `from pipeline.config import ${s.const}`, `from pipeline.${s.fn.split('_')[0]} import ${s.fn}, ${s.fn2}`, '', 'logger = logging.getLogger(__name__)', '']
    default:
      return [`package ${rng.pick(['proxy', 'auth', 'config', 'ratelimit', 'deploy'])}`, '', 'import (', '\t"context"', '\t"fmt"', '\t"log/slog"', ')', '', `const ${s.const} = ${s.ms}`, '']
  }
}

/** YAML, Makefile, manifests and docs, which are not code. */
function otherFile(rng, P, path) {
  if (path.endsWith('deployment.yaml'))
    return ['apiVersion: apps/v1', 'kind: Deployment', 'metadata:', '  name: gateway', '  namespace: gateway', 'spec:', '  replicas: 3', '  strategy:', '    type: RollingUpdate', '    rollingUpdate:', '      maxUnavailable: 100%', '  template:', '    spec:', '      containers:', '        - name: gateway', '          image: registry.internal/gateway:1.14.2', '          resources:', '            requests:', '              cpu: "1"', '              memory: 512Mi', '          readinessProbe:', '            httpGet: { path: /healthz, port: 8080 }', ''].join('\n')
  if (path.endsWith('.yaml')) return ['replicaCount: 3', 'image:', '  repository: registry.internal/gateway', '  tag: 1.14.2', 'upstreams:', ...P.nouns.slice(0, 4).map((n) => `  - name: ${words(n).join('-')}\n    url: http://${words(n).join('-')}.svc:8080`), 'resources:', '  requests: { cpu: 500m, memory: 256Mi }', ''].join('\n')
  if (path === 'Makefile') return ['.PHONY: build test lint docker', 'build:', '\tgo build -o bin/gateway ./cmd/gateway', 'test:', '\tgo test ./...', 'lint:', '\tgolangci-lint run', 'docker:', '\tdocker build -t registry.internal/gateway:$(VERSION) .', ''].join('\n')
  if (path === 'package.json') return JSON.stringify({ name: P.key, version: '2.3.1', type: 'module', scripts: { test: 'vitest run', lint: 'eslint src', build: 'tsc -p .' }, dependencies: Object.fromEntries(P.deps.filter((d) => d !== 'vitest' && d !== 'typescript').map((d, i) => [d, `^${1 + i}.${rng.range(0, 20)}.${rng.range(0, 9)}`])), devDependencies: { vitest: '^3.2.4', typescript: '^5.9.3' } }, null, 2) + '\n'
  if (path === 'Cargo.toml') return ['[package]', `name = "${P.key.replace('-', '_')}"`, 'version = "0.9.4"', 'edition = "2021"', '', '[dependencies]', ...P.deps.map((d, i) => `${d} = "${i % 3}.${rng.range(1, 30)}"`), ''].join('\n')
  if (path === 'pyproject.toml') return ['[project]', `name = "${P.key}"`, 'version = "1.6.0"', 'dependencies = [', ...P.deps.filter((d) => d !== 'pytest').map((d) => `  "${d}>=${rng.range(1, 3)}.${rng.range(0, 9)}",`), ']', ''].join('\n')
  if (path === 'go.mod') return ['module github.com/acme/deploy-gateway', '', 'go 1.23', '', 'require (', ...P.deps.map((d) => `\t${d} v${rng.range(0, 5)}.${rng.range(0, 20)}.${rng.range(0, 9)}`), ')', ''].join('\n')
  // README and other docs
  const lines = [`# ${P.key}`, '', `${CAP(P.nouns[0])} service: ${P.nouns.slice(1, 4).join(', ')} and ${P.nouns[4]}.`, '', '## Development', '', '```sh', P.test, P.lint, '```', '', '## Options', '']
  for (const c of P.consts) lines.push(`- \`${c}\`: ${prose(rng, P, 1)}`)
  return lines.join('\n') + '\n'
}

const CODE_EXT = /\.(ts|rs|py|go)$/

/**
 * The content of `path` in project P: deterministic per (project, path). `plant` puts an incident's `before`
 * line into it (at top level, or inside a function named `wrap`) so that its edit's old text is there to replace.
 * @param {{ before: string, wrap?: string } | undefined} plant
 */
export function fileContent(P, path, plant) {
  const rng = new Rng(hash32('quality-file', P.key, path))
  if (!CODE_EXT.test(path)) {
    const text = otherFile(rng, P, path)
    return plant && !text.includes(plant.before) ? `${text}\n${plant.before}\n` : text
  }
  const lines = header(rng, P)
  const count = rng.range(3, 7)
  const at = plant ? rng.range(1, count - 1) : -1
  for (let i = 0; i < count; i++) {
    if (i === at) {
      if (/^\S/.test(plant.before)) lines.push(plant.before, '')
      else lines.push(...fnBlock(rng, P, plant.wrap ?? rng.pick(P.fns), [plant.before]))
    }
    lines.push(...fnBlock(rng, P, rng.pick(P.fns)))
  }
  return lines.join('\n')
}

/** A test file for `fn` (what an "add tests" session writes). */
export function testFileContent(rng, P, fn, cases) {
  const s = slots(rng, P)
  const name = (c) => `${c} ${s.noun}`
  switch (P.lang) {
    case 'ts':
      return [`import { describe, expect, it } from 'vitest'`, `import { ${fn} } from '../${s.file.replace(/\.ts$/, '').replace(/^src\//, 'src/')}'`, '', `describe('${fn}', () => {`, ...cases.flatMap((c) => [`  it('handles ${name(c)}', async () => {`, `    const result = await ${fn}(fixture('${words(c).join('-')}'))`, `    expect(result).toMatchSnapshot()`, '  })', '']), '})', ''].join('\n')
    case 'rust':
      return [`use ${P.key.replace('-', '_')}::${fn};`, '', ...cases.flatMap((c) => ['#[test]', `fn ${fn}_${words(c).join('_')}() {`, `    let result = ${fn}(&fixture("${words(c).join('_')}")).unwrap();`, '    insta::assert_debug_snapshot!(result);', '}', ''])].join('\n')
    case 'py':
      return [`from pipeline import ${fn}`, '', ...cases.flatMap((c) => [`def test_${fn}_${words(c).join('_')}(fixture):`, `    result = ${fn}(fixture("${words(c).join('_')}"))`, '    assert result is not None', ''])].join('\n')
    default:
      return ['package proxy', '', 'import "testing"', '', ...cases.flatMap((c) => [`func Test${fn}${words(c).map(CAP).join('')}(t *testing.T) {`, `\tif _, err := ${fn}(ctx, fixture("${words(c).join('-')}")); err != nil {`, '\t\tt.Fatal(err)', '\t}', '}', ''])].join('\n')
  }
}

/** Lines of `content` an edit may replace: plain code lines that hold no planted identifier or line. */
export function editableLines(content, reserved) {
  return content.split('\n').filter((l) => l.trim().length > 12 && !reserved.some((r) => l.includes(r)))
}

// ---------------------------------------------------------------------------------------------------
// Command output
// ---------------------------------------------------------------------------------------------------

/** Test names of project P, stable per (project, index). */
function testName(P, i) {
  const r = new Rng(hash32('quality-test', P.key, i))
  const s = slots(r, P)
  return P.lang === 'rust' || P.lang === 'py' ? `${s.fn}_${r.pick(['handles', 'rejects', 'keeps', 'returns'])}_${words(s.noun).join('_')}` : `${s.fn} ${r.pick(['handles', 'rejects', 'keeps', 'returns'])} the ${s.noun}`
}

/**
 * A test run of project P: passing, or failing in one test with `failure` (the error text as printed).
 * @returns {{ text: string, isError: boolean }}
 */
export function testRun(rng, P, failure = null, failingTest = null) {
  const n = rng.range(18, 60)
  const failAt = failure ? rng.int(n) : -1
  const name = (i) => (i === failAt && failingTest ? failingTest : testName(P, i))
  const out = []
  const seconds = (rng.next() * 20 + 1).toFixed(2)
  if (P.lang === 'ts') {
    out.push(` RUN  v3.2.4 ${P.cwd}`, '')
    for (const f of P.testFiles) out.push(` ${failure && f === P.testFiles[failAt % P.testFiles.length] ? '❯' : '✓'} ${f} (${rng.range(3, 20)} tests) ${rng.range(5, 900)}ms`)
    if (failure) out.push('', `⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯`, '', ` FAIL  ${P.testFiles[failAt % P.testFiles.length]} > ${name(failAt)}`, failure, ` ❯ ${rng.pick(P.files)}:${rng.range(10, 300)}:${rng.range(3, 40)}`, ` ❯ ${P.testFiles[failAt % P.testFiles.length]}:${rng.range(10, 200)}:${rng.range(3, 40)}`, '')
    out.push(` Test Files  ${failure ? `1 failed | ${P.testFiles.length - 1} passed` : `${P.testFiles.length} passed`} (${P.testFiles.length})`, `      Tests  ${failure ? `1 failed | ${n - 1} passed` : `${n} passed`} (${n})`, `   Duration  ${seconds}s`)
  } else if (P.lang === 'rust') {
    out.push(`   Compiling ${P.key.replace('-', '_')} v0.9.4 (${P.cwd})`, `    Finished \`test\` profile [unoptimized + debuginfo] target(s) in ${seconds}s`, `     Running unittests src/lib.rs`, '', `running ${n} tests`)
    for (let i = 0; i < n; i++) out.push(`test ${name(i)} ... ${i === failAt ? 'FAILED' : 'ok'}`)
    if (failure) out.push('', 'failures:', '', `---- ${name(failAt)} stdout ----`, failure, 'note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace', '', 'failures:', `    ${name(failAt)}`)
    out.push('', `test result: ${failure ? 'FAILED' : 'ok'}. ${failure ? n - 1 : n} passed; ${failure ? 1 : 0} failed; 0 ignored; 0 measured; 0 filtered out; finished in ${seconds}s`)
  } else if (P.lang === 'py') {
    out.push('============================= test session starts ==============================', `collected ${n} items`, '')
    for (const f of P.testFiles) out.push(`${f} ${'.'.repeat(rng.range(3, 12))}${failure && f === P.testFiles[failAt % P.testFiles.length] ? 'F' : ''}`)
    if (failure) out.push('', '=================================== FAILURES ===================================', `_______________________________ test_${name(failAt)} _______________________________`, '', `    def test_${name(failAt)}(fixture):`, `>       result = ${rng.pick(P.fns)}(fixture)`, '', ...failure.split('\n').map((l) => `E       ${l}`), '', `${P.testFiles[failAt % P.testFiles.length]}:${rng.range(10, 200)}: ${failure.split(':')[0]}`, `=========================== short test summary info ============================`, `FAILED ${P.testFiles[failAt % P.testFiles.length]}::test_${name(failAt)}`)
    out.push(`${failure ? `1 failed, ${n - 1} passed` : `${n} passed`} in ${seconds}s`)
  } else {
    const pkgs = ['internal/proxy', 'internal/auth', 'internal/ratelimit', 'internal/config', 'internal/deploy']
    const failPkg = failure ? pkgs[failAt % pkgs.length] : null
    for (const pkg of pkgs) {
      if (pkg !== failPkg) out.push(`ok  \tgithub.com/acme/deploy-gateway/${pkg}\t${(rng.next() * 3).toFixed(3)}s`)
      else out.push(`--- FAIL: Test${words(testName(P, failAt)).map(CAP).join('')} (${(rng.next() * 4).toFixed(2)}s)`, ...failure.split('\n').map((l) => `    ${pkg.split('/')[1]}_test.go:${rng.range(20, 200)}: ${l}`), 'FAIL', `FAIL\tgithub.com/acme/deploy-gateway/${pkg}\t${(rng.next() * 5).toFixed(3)}s`)
    }
    if (failure) out.push('FAIL')
  }
  return { text: out.join('\n') + (failure ? '\n\nCommand exited with code 1' : ''), isError: Boolean(failure) }
}

const LINT_RULES = {
  ts: ['@typescript-eslint/no-unused-vars', 'no-await-in-loop', '@typescript-eslint/no-floating-promises', 'prefer-const', 'eqeqeq'],
  rust: ['clippy::needless_borrow', 'clippy::redundant_clone', 'clippy::too_many_arguments', 'clippy::manual_let_else', 'unused_imports'],
  py: ['F401 imported but unused', 'E501 line too long (104 > 100)', 'B008 do not perform function calls in argument defaults', 'SIM108 use ternary operator', 'UP035 deprecated import'],
  go: ['errcheck', 'ineffassign', 'staticcheck SA4006', 'unused', 'gosimple S1002'],
}

/** A lint run over `files`: warnings (failing) or clean. */
export function lintRun(rng, P, files, failing) {
  if (!failing) return { text: P.lang === 'py' ? 'All checks passed!' : P.lang === 'rust' ? `    Checking ${P.key.replace('-', '_')} v0.9.4 (${P.cwd})\n    Finished \`dev\` profile [unoptimized + debuginfo] target(s) in 3.41s` : '', isError: false }
  const out = []
  for (const f of files)
    for (let k = rng.range(1, 3); k > 0; k--) {
      const rule = rng.pick(LINT_RULES[P.lang])
      const line = rng.range(3, 240)
      if (P.lang === 'ts') out.push(`${P.cwd}/${f}`, `  ${line}:${rng.range(1, 40)}  error  ${rng.pick(['\'' + rng.pick(P.fns) + '\' is defined but never used', 'Unexpected `await` inside a loop', 'Promises must be awaited', 'Expected \'===\' and instead saw \'==\''])}  ${rule}`, '')
      else if (P.lang === 'rust') out.push(`error: ${rule.replace('clippy::', '').replace(/_/g, ' ')}`, `  --> ${f}:${line}:${rng.range(1, 40)}`, '   |', `   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#${rule.replace('clippy::', '')}`, '')
      else if (P.lang === 'py') out.push(`${f}:${line}:${rng.range(1, 40)}: ${rule}`)
      else out.push(`${f}:${line}:${rng.range(1, 40)}: ${rng.pick(['Error return value is not checked', 'ineffectual assignment to err', 'this value of err is never used', 'func is unused'])} (${rule})`)
    }
  out.push(P.lang === 'py' ? `Found ${out.length} errors.` : `✖ ${out.length} problems`)
  return { text: out.join('\n') + '\n\nCommand exited with code 1', isError: true }
}

/** `git diff` of a few edits in P; `contentOf(path)` is a file's content, `reserved` what no edit may touch. */
export function gitDiff(rng, P, files, contentOf, reserved) {
  const out = []
  for (const f of files) {
    const lines = editableLines(contentOf(f), reserved)
    const at = rng.int(Math.max(1, lines.length - 3))
    out.push(`diff --git a/${f} b/${f}`, `index ${rng.hex8().slice(0, 7)}..${rng.hex8().slice(0, 7)} 100644`, `--- a/${f}`, `+++ b/${f}`, `@@ -${at + 10},4 +${at + 10},6 @@`, ...lines.slice(at, at + 3).map((l) => ` ${l}`), `+${lines[at]?.replace(/\S.*/, '')}${P.lang === 'py' ? '#' : '//'} ${prose(rng, P, 1).replace(/\.$/, '')}`, `+${lines[(at + 1) % lines.length]}`)
  }
  return out.join('\n')
}

/** `grep -rn <pattern>` over P's files: the lines that hold the pattern, else one near miss. */
export function grepOutput(rng, P, pattern, contentOf) {
  const out = []
  for (const f of P.files) {
    contentOf(f).split('\n').forEach((l, i) => {
      if (l.includes(pattern) && out.length < 12) out.push(`${f}:${i + 1}:${l.trim()}`)
    })
  }
  return out.length ? out.join('\n') : `${rng.pick(P.files)}:${rng.range(5, 90)}:  ${pattern}(${varName(P, rng.pick(P.nouns))})`
}

// ---------------------------------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------------------------------

const LOG_MESSAGES = [
  '{noun} processed id={id} duration_ms={ms}',
  'starting {fn} for {noun} batch={n}',
  'finished {fn} ok=true items={n} elapsed={ms}ms',
  'retrying {fn} attempt={n} backoff_ms={ms}',
  'slow {noun}: {ms}ms above threshold',
  'cache miss for {noun} key={id}',
  'connection to {component} established in {ms}ms',
  'request completed status=200 route=/{noun2} bytes={ms}{n}',
  'request completed status=404 route=/{noun2} bytes=0',
  'scheduled {fn} next_in={n}m',
  'warning: {noun} queue depth {ms} exceeds soft limit',
  'heartbeat ok workers={n} queue={ms}',
]

/**
 * About `chars` characters of P's service log, one line holding `needle` somewhere past the first
 * `minOffset` characters (so it sits past the engine's 2,000-character hot entry cut).
 */
export function longLog(rng, P, needle, chars = 20_000, minOffset = 4_000) {
  const lines = []
  let size = 0
  let clock = Date.UTC(2026, 3, 2, 1, 0, 0)
  const needleAt = rng.range(minOffset, Math.floor(chars * 0.85))
  let planted = false
  while (size < chars) {
    clock += rng.range(20, 4000)
    const s = slots(rng, P)
    const level = rng.weighted(['INFO', 'DEBUG', 'WARN', 'ERROR'], [60, 25, 12, 3])
    let message = fill(rng.pick(LOG_MESSAGES), { ...s, noun: words(s.noun).join('_'), noun2: words(s.noun2).join('-'), id: rng.hex8() })
    if (!planted && size >= needleAt) {
      message = `${rng.pick(['request failed', 'call failed', 'job step failed', 'event'])}: ${needle} ${rng.pick(['(will retry)', 'after 3 attempts', 'in ' + s.component, ''])}`.trim()
      planted = true
    }
    const line = `${new Date(clock).toISOString()} ${level.padEnd(5)} [${s.component}] ${message}`
    lines.push(line)
    size += line.length + 1
  }
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------------------
// Prose
// ---------------------------------------------------------------------------------------------------

const SENTENCES = [
  '`{fn}` is called from `{fn2}` once the {noun} is ready, and it hands the {noun2} on to the {component} layer.',
  'The {noun} handling lives in `{file}`; `{fn}` does the heavy lifting and `{fn2}` only validates its input.',
  'When the {noun} is empty we still call `{fn}`, which logs a warning but is otherwise harmless.',
  '`{type}` carries the {noun2} through the whole request, so changing it touches `{file}` and `{file2}`.',
  'Nothing else reads `{const}`, so it is safe to change in one place.',
  'The tests in `{test}` cover the {noun} path but not the case where the {noun2} is missing.',
  'I kept the public signature of `{fn}` unchanged, so callers in `{file2}` need no update.',
  'There are {n} call sites of `{fn2}`; all of them pass a `{type}` built by `{fn}`.',
  'The {component} code path is the only one that creates a {noun} without going through `{fn}`.',
  'Most of the time goes into `{fn2}` ({ms} ms on the sample {noun}), the rest is serialization.',
  'I would leave the {noun2} logic alone for now; it is covered and nobody reported problems with it.',
  'The naming is a little inconsistent: `{fn}` and `{fn2}` do similar things for the {noun} and the {noun2}.',
]

/** `count` sentences about project P. */
export function prose(rng, P, count) {
  const out = []
  for (let i = 0; i < count; i++) out.push(fill(rng.pick(SENTENCES), slots(rng, P)))
  return out.join(' ')
}
