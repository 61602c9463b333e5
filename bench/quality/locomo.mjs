// LoCoMo (long multi-session conversations with labelled questions) as a quality set: one Pi session per
// conversation session, one project per conversation. The data is CC BY-NC and never enters this repository;
// README.md beside this file says where to get it.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'

export const LOCOMO_SOURCE = {
  repo: 'https://github.com/snap-research/locomo',
  commit: 'e76cdff4a04fce19090596d49862fe87a5c15aaa',
  file: 'data/locomo10.zip',
  sha256: '5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5',
  unpacked: 'data/multimodal_dialog/locomo10_v2/*.json',
}

/** LoCoMo's question categories. */
export const CATEGORIES = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' }

export const HOW_TO_GET = `LoCoMo data not found: pass --quality-data <dir> or set PFM_QUALITY_DATA to the directory holding its
conversation JSON files. To get them (licensed CC BY-NC: keep them out of this repository):
  curl -L -o locomo10.zip ${LOCOMO_SOURCE.repo}/raw/${LOCOMO_SOURCE.commit}/${LOCOMO_SOURCE.file}
  echo '${LOCOMO_SOURCE.sha256}  locomo10.zip' | sha256sum -c
  unzip locomo10.zip -d locomo && export PFM_QUALITY_DATA=$PWD/locomo/${path.dirname(LOCOMO_SOURCE.unpacked)}`

/** The directory of conversation files, or null when there is none (the set is then skipped). */
export function findLocomoDir(/** @type {string | undefined} */ given) {
  const dir = given ?? process.env.PFM_QUALITY_DATA
  if (!dir || !existsSync(dir)) return null
  return readdirSync(dir).some((f) => f.endsWith('.json')) ? dir : null
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']

/** "1:56 pm on 8 May, 2023" → ms since the epoch (read as UTC). */
export function parseLocomoDate(/** @type {string} */ text) {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})$/i.exec(text.trim())
  const month = m ? MONTHS.indexOf(m[5].toLowerCase()) : -1
  if (!m || month < 0) throw new Error(`unrecognized LoCoMo date: ${JSON.stringify(text)}`)
  const hour = (Number(m[1]) % 12) + (m[3].toLowerCase() === 'pm' ? 12 : 0)
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]))
}

/**
 * Session numbers named by evidence ids. A few ids are malformed in the data ("D8:6; D9:17", "D:11:26",
 * "D9:1 D4:4"), so every `D<n>:<k>` inside each string counts, with an optional stray colon after the D.
 */
export function evidenceSessions(/** @type {string[]} */ evidence) {
  const sessions = new Set()
  for (const e of evidence) for (const m of String(e).matchAll(/D:?(\d+):\d+/g)) sessions.add(Number(m[1]))
  return [...sessions].sort((a, b) => a - b)
}

/** @returns {import('./pi-session.mjs').QualitySet} */
export function loadLocomo(/** @type {string} */ dir) {
  const sessions = []
  const questions = []
  const skipped = { noEvidence: 0, evidenceOutsideConversation: 0 }
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const data = JSON.parse(readFileSync(path.join(dir, name), 'utf8'))
    const conv = `conv-${data.sample_id ?? path.basename(name, '.json')}`.replace(/^conv-conv-/, 'conv-')
    const cwd = `/home/bench/locomo/${conv}`
    const numbers = Object.keys(data)
      .map((k) => /^session_(\d+)$/.exec(k)?.[1])
      .filter((n) => n && data[`session_${n}`]?.length)
      .map(Number)
      .sort((a, b) => a - b)
    for (const n of numbers) {
      const startMs = parseLocomoDate(data[`session_${n}_date_time`])
      sessions.push({
        key: `${conv}/s${n}`,
        cwd,
        startMs,
        // speaker_a speaks as the user, speaker_b as the assistant; turns a minute apart.
        turns: data[`session_${n}`].map((t, k) => ({
          role: t.speaker === data.speaker_a ? 'user' : 'assistant',
          text: `${t.speaker}: ${t.text}${t.blip_caption ? ` [shares a photo: ${t.blip_caption}]` : ''}`,
          ms: startMs + k * 60_000,
        })),
      })
    }
    data.qa.forEach((qa, i) => {
      const named = evidenceSessions(qa.evidence ?? [])
      const answers = named.filter((n) => numbers.includes(n))
      if (!named.length) return void skipped.noEvidence++
      if (!answers.length) return void skipped.evidenceOutsideConversation++
      questions.push({
        id: `${conv}/q${i}`,
        query: qa.question,
        cwd,
        type: CATEGORIES[qa.category] ?? `category-${qa.category}`,
        answers: answers.map((n) => `${conv}/s${n}`),
        note: String(qa.answer ?? qa.adversarial_answer ?? ''),
      })
    })
  }
  return { name: 'locomo', sessions, questions, skipped }
}
