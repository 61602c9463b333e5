#!/usr/bin/env node
// `npm run pack:local`: this built checkout as a package Pi can install from a
// directory, with its binary. Until the first release no platform package can
// be fetched, so the binary the build wrote (`pi-fabric-memory.<triple>.node`)
// sits beside binding.cjs, which loads it from there. Writes
//   local/pi-fabric-memory/                          `pi install` this directory
//   local/pi-fabric-memory-<version>-<triple>.tgz    the same, to carry elsewhere
// The files are the ones `npm pack` ships; the manifest drops devDependencies
// and scripts: with Pi's packages both dev dependencies and optional peers, an
// `npm install` in the directory would fetch Pi and its AI SDKs (~137 MB).
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const out = join(root, 'local')
const dir = join(out, manifest.name)

function fail(message) {
  console.error(`pack:local: ${message}`)
  process.exit(1)
}

const binaries = readdirSync(root).filter((name) => name.startsWith(`${manifest.napi.binaryName}.`) && name.endsWith('.node'))
if (binaries.length === 0) fail(`no built binary (${manifest.napi.binaryName}.<triple>.node) in ${root}: run npm run build first`)
if (!existsSync(join(root, 'dist/extension/index.mjs'))) fail(`no dist/extension/ in ${root}: run npm run build first`)
// Only ever replace a directory this script wrote.
if (existsSync(dir)) {
  let previous
  try {
    previous = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  } catch {}
  if (previous?.name !== manifest.name) fail(`${dir} exists and is not a ${manifest.name} package: move it away first`)
  rmSync(dir, { recursive: true })
}

const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
const [listing] = JSON.parse(npm(['pack', '--dry-run', '--json', '--ignore-scripts'], root))
for (const { path } of listing.files) {
  if (path === 'package.json') continue
  mkdirSync(dirname(join(dir, path)), { recursive: true })
  copyFileSync(join(root, path), join(dir, path))
}
for (const binary of binaries) copyFileSync(join(root, binary), join(dir, binary))
const { devDependencies, scripts, allowScripts, ...shipped } = manifest
writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ ...shipped, files: [...manifest.files, ...binaries] }, null, 2)}\n`)

const [packed] = JSON.parse(npm(['pack', '--json', '--ignore-scripts', '--pack-destination', out], dir))
const triples = binaries.map((name) => name.slice(manifest.napi.binaryName.length + 1, -'.node'.length)).join('+')
const tarball = join(out, `${manifest.name}-${manifest.version}-${triples}.tgz`)
renameSync(join(out, packed.filename), tarball)

const bytes = packed.files.reduce((sum, file) => sum + statSync(join(dir, file.path)).size, 0)
console.log(`${relative(process.cwd(), dir) || '.'}/  ${packed.files.length} files, ${(bytes / 1e6).toFixed(1)} MB, no dependencies`)
console.log(`  pi install "${dir}"`)
console.log(`${relative(process.cwd(), tarball)}  the same, packed`)
