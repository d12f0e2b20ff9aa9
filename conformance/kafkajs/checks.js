// Conformance checks of KafkaJS (the pure JavaScript client) against a
// Kafka-compatible cluster:
//
//   node checks.js BOOTSTRAP [REGEXP]
//
// Each check prints "PASS name" or "FAIL name: reason"; the run ends with
// "N passed, N failed" and exits with 1 if any failed. scripts/
// conformance-kafkajs.sh installs the pinned packages (package-lock.json) in a
// cache and starts floe (or Apache Kafka, to prove the checks, with
// CONFORMANCE_KAFKA=1, which leaves out the floe-* checks of floe's own
// features).
// CHECK_TIMEOUT (seconds, default 60) bounds each check.
'use strict'

const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')

const [bootstrap, pattern] = process.argv.slice(2)
if (!bootstrap) {
  console.error('usage: node checks.js BOOTSTRAP [REGEXP]')
  process.exit(2)
}
const timeoutMs = 1000 * Number(process.env.CHECK_TIMEOUT || 60)
const suffix = Date.now().toString(36)
let n = 0
const name = base => `kafkajs-${base}-${suffix}-${++n}`

const kafka = new Kafka({ clientId: 'floe-conformance-kafkajs', brokers: [bootstrap], logLevel: logLevel.NOTHING })

// fail throws a check's failure.
const fail = msg => { throw new Error(msg) }

// withClient connects a KafkaJS client (admin, producer or consumer), runs
// f with it and disconnects.
async function withClient (client, f) {
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.disconnect()
  }
}

async function createTopic (topic, numPartitions) {
  await withClient(kafka.admin(), async admin => {
    if (!await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true })) {
      fail(`createTopics ${topic}: not created`)
    }
  })
}

// keyed returns count messages with keys k-I, values and headers, to
// partitions 0..parts-1 in turn.
function keyed (count, tag, parts = 1) {
  return Array.from({ length: count }, (_, i) => ({
    partition: i % parts,
    key: `k-${i}`,
    value: `${tag} value ${i} ${'x'.repeat(i % 40)}`,
    headers: { i: String(i), tag }
  }))
}

// send produces msgs to topic and returns them with the offsets they were
// acknowledged at (from each partition's base offset).
async function send (producer, topic, msgs, opts = {}) {
  const res = await producer.send({ topic, messages: msgs, acks: -1, ...opts })
  const base = {}
  for (const r of res) {
    if (r.errorCode !== 0) fail(`produce to ${topic}/${r.partition}: error code ${r.errorCode}`)
    base[r.partition] = Number(r.baseOffset)
  }
  const next = { ...base }
  return msgs.map(m => ({ ...m, offset: next[m.partition]++ }))
}

// read consumes topic from the beginning with a new group until count
// messages have come, and returns them in arrival order.
async function read (topic, count, opts = {}) {
  const consumer = kafka.consumer({ groupId: name('reader'), ...opts })
  return withClient(consumer, async () => {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    return collect(consumer, count)
  })
}

// collect runs consumer until count messages have come (20 s at most),
// then calls atEnd with them, if given, before it stops the consumer.
async function collect (consumer, count, atEnd) {
  const got = []
  let done
  const all = new Promise(resolve => { done = resolve })
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      got.push({ partition, offset: Number(message.offset), key: message.key && message.key.toString(), value: message.value.toString(), headers: message.headers })
      if (got.length >= count) done()
    }
  })
  if (count > 0) {
    let timer
    await Promise.race([all, new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`read ${got.length} of ${count} messages in 20 s`)), 20000)
    })]).finally(() => clearTimeout(timer))
  }
  if (atEnd) await atEnd(got)
  await consumer.stop()
  return got
}

// positions are the offsets to commit for the records read of topic: each
// partition's, past the last record read there.
function positions (topic, read) {
  const next = {}
  for (const r of read) next[r.partition] = Math.max(next[r.partition] || 0, r.offset + 1)
  return Object.entries(next).map(([partition, offset]) => ({ topic, partition: Number(partition), offset: String(offset) }))
}

// same fails unless got holds exactly the acknowledged records of want.
function same (want, got) {
  if (got.length !== want.length) fail(`read ${got.length} records, produced ${want.length}`)
  const byPos = new Map(got.map(g => [`${g.partition}/${g.offset}`, g]))
  for (const w of want) {
    const g = byPos.get(`${w.partition}/${w.offset}`)
    if (!g) fail(`no record read at ${w.partition}/${w.offset}`)
    if (g.key !== w.key || g.value !== w.value) {
      fail(`record at ${w.partition}/${w.offset}: key ${g.key} value ${g.value}, produced ${w.key} ${w.value}`)
    }
    for (const [k, v] of Object.entries(w.headers)) {
      if (!g.headers[k] || g.headers[k].toString() !== v) fail(`record at ${w.partition}/${w.offset}: header ${k} is ${g.headers[k]}, produced ${v}`)
    }
  }
}

// produceConsume: an idempotent producer sends 200 records with headers
// over 2 partitions with the codec; a group reads back exactly those.
function produceConsume (compression) {
  return async () => {
    const topic = name('codec')
    await createTopic(topic, 2)
    const acked = await withClient(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }),
      p => send(p, topic, keyed(200, `codec-${compression}`, 2), { compression }))
    same(acked, await read(topic, 200))
    // Nothing past what was read: each partition ends there.
    await withClient(kafka.admin(), async admin => {
      for (const o of await admin.fetchTopicOffsets(topic)) {
        const n = acked.filter(m => m.partition === o.partition).length
        if (o.high !== String(n)) fail(`partition ${o.partition} ends at ${o.high}, want ${n}`)
      }
    })
  }
}

async function describeCluster () {
  await withClient(kafka.admin(), async admin => {
    const c = await admin.describeCluster()
    if (!c.clusterId || c.brokers.length < 1 || !c.brokers.some(b => b.nodeId === c.controller)) {
      fail(`describeCluster: ${JSON.stringify(c)}`)
    }
    for (const b of c.brokers) if (!b.host || !(b.port > 0)) fail(`describeCluster broker ${JSON.stringify(b)}`)
  })
}

// autoCreate: producing to a topic that does not exist creates it
// (auto.create.topics.enable, KafkaJS's allowAutoTopicCreation).
async function autoCreate () {
  const topic = name('auto')
  const acked = await withClient(kafka.producer(), p => send(p, topic, keyed(3, 'auto')))
  same(acked, await read(topic, 3))
}

// adminTopics: createTopics (again: not created), listTopics,
// fetchTopicMetadata with 3 partitions and leaders, describeConfigs,
// createPartitions to 5, deleteTopicRecords, fetchTopicOffsets, deleteTopics.
async function adminTopics () {
  const topic = name('admin')
  await withClient(kafka.admin(), async admin => {
    if (!await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true })) fail('createTopics: not created')
    if (await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] })) fail('createTopics again: created')
    if (!(await admin.listTopics()).includes(topic)) fail('listTopics: not listed')
    const partitionsAre = async count => {
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      const ps = md.topics[0].partitions
      if (md.topics[0].name !== topic || ps.length !== count) fail(`fetchTopicMetadata: ${JSON.stringify(md)}, want ${count} partitions`)
      for (const p of ps) if (p.leader < 0 || !p.replicas.includes(p.leader)) fail(`partition ${JSON.stringify(p)}: no leader among replicas`)
    }
    await partitionsAre(3)
    const cfg = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false })
    const entries = Object.fromEntries(cfg.resources[0].configEntries.map(e => [e.configName, e.configValue]))
    if (!entries['retention.ms'] || entries['cleanup.policy'] !== 'delete') fail(`describeConfigs: ${JSON.stringify(entries)}`)
    await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] })
    await partitionsAre(5)
    await withClient(kafka.producer(), p => send(p, topic, keyed(5, 'admin').map(m => ({ ...m, partition: 4 }))))
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 4, offset: '3' }] })
    const offs = (await admin.fetchTopicOffsets(topic)).find(o => o.partition === 4)
    if (offs.low !== '3' || offs.high !== '5') fail(`fetchTopicOffsets after deleteTopicRecords: ${JSON.stringify(offs)}, want low 3 high 5`)
    const got = (await read(topic, 2)).filter(g => g.partition === 4)
    if (got.length !== 2 || got[0].offset !== 3) fail(`after deleteTopicRecords read ${JSON.stringify(got.map(g => g.offset))}, want [3,4]`)
    await admin.deleteTopics({ topics: [topic] })
    await eventually(10000, async () => {
      if ((await admin.listTopics()).includes(topic)) fail('deleted topic still listed')
    })
  })
}

// offsetsByTimestamp: three records a second apart; the offset for a time
// is the first at or after it, the log end past the last.
async function offsetsByTimestamp () {
  const topic = name('times')
  await createTopic(topic, 1)
  const t0 = Math.floor(Date.now() / 1000) * 1000 - 3600000
  const msgs = keyed(3, 'times').map((m, i) => ({ ...m, timestamp: String(t0 + 1000 * i) }))
  await withClient(kafka.producer(), p => send(p, topic, msgs))
  await withClient(kafka.admin(), async admin => {
    for (const [at, want] of [[t0 - 60000, 0], [t0, 0], [t0 + 500, 1], [t0 + 2000, 2], [t0 + 3000, 3]]) {
      const got = await admin.fetchTopicOffsetsByTimestamp(topic, at)
      // KafkaJS answers the high watermark where Kafka finds no offset (-1).
      if (got[0].offset !== String(want)) fail(`offset for t0+${at - t0} ms: ${got[0].offset}, want ${want}`)
    }
  })
}

// groupCommitResume: a group reads 30 records of 2 partitions and commits;
// the committed offsets are the ends (fetchOffsets), the group is listed
// and described Empty; a restarted member reads exactly the 10 produced
// since; deleteGroups then removes the group.
async function groupCommitResume () {
  const topic = name('group')
  const groupId = name('group-id')
  await createTopic(topic, 2)
  const producer = kafka.producer()
  await withClient(producer, async () => {
    const first = await send(producer, topic, keyed(30, 'first', 2))
    const ends = {}
    for (const m of first) ends[m.partition] = Math.max(ends[m.partition] || 0, m.offset + 1)
    const consumer = kafka.consumer({ groupId })
    await withClient(consumer, async () => {
      await consumer.subscribe({ topics: [topic], fromBeginning: true })
      // Commits the consumer's own positions: past the last record it read.
      await collect(consumer, 30, read => consumer.commitOffsets(positions(topic, read)))
    })
    await withClient(kafka.admin(), async admin => {
      const offs = await admin.fetchOffsets({ groupId, topics: [topic] })
      for (const [p, end] of Object.entries(ends)) {
        const got = offs[0].partitions.find(o => o.partition === Number(p))
        if (!got || Number(got.offset) !== end) fail(`committed offset of partition ${p}: ${got && got.offset}, want ${end}`)
      }
      if (!(await admin.listGroups()).groups.some(g => g.groupId === groupId)) fail('listGroups: not listed')
      const desc = await admin.describeGroups([groupId])
      if (desc.groups[0].state !== 'Empty' || desc.groups[0].protocolType !== 'consumer') fail(`describeGroups: ${JSON.stringify(desc.groups[0])}`)
    })
    const second = await send(producer, topic, keyed(10, 'second', 2))
    const again = kafka.consumer({ groupId })
    const got = await withClient(again, async () => {
      await again.subscribe({ topics: [topic], fromBeginning: true })
      return collect(again, 10)
    })
    same(second, got)
    await withClient(kafka.admin(), admin => admin.deleteGroups([groupId]))
  })
}

// groupRebalance: two members split 4 partitions 2 and 2; once one leaves,
// the other owns all 4.
async function groupRebalance () {
  const topic = name('rebalance')
  const groupId = name('rebalance-id')
  await createTopic(topic, 4)
  const member = () => {
    const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 })
    c.owned = []
    c.on(c.events.GROUP_JOIN, e => { c.owned = (e.payload.memberAssignment[topic] || []).slice().sort() })
    return c
  }
  const a = member()
  const b = member()
  await a.connect()
  try {
    await a.subscribe({ topics: [topic] })
    await a.run({ eachMessage: async () => {} })
    await eventually(30000, async () => { if (a.owned.length !== 4) fail(`alone: owns ${a.owned}`) })
    await b.connect()
    await b.subscribe({ topics: [topic] })
    await b.run({ eachMessage: async () => {} })
    await eventually(30000, async () => {
      if (a.owned.length !== 2 || b.owned.length !== 2 || new Set([...a.owned, ...b.owned]).size !== 4) {
        fail(`two members own ${a.owned} and ${b.owned}`)
      }
    })
    await b.disconnect()
    await eventually(30000, async () => { if (a.owned.length !== 4) fail(`after the second left: owns ${a.owned}`) })
  } finally {
    await a.disconnect()
    await b.disconnect()
  }
}

// txnCommitAbort: a transactional producer commits 5 records, aborts 3,
// commits 2; read_committed (KafkaJS's default) reads the 7 committed,
// read_uncommitted all 10, both skipping the markers.
async function txnCommitAbort () {
  const topic = name('txn')
  await createTopic(topic, 1)
  const producer = kafka.producer({ transactionalId: name('txn-id'), idempotent: true, maxInFlightRequests: 1 })
  const committed = []
  await withClient(producer, async () => {
    for (const [count, commit] of [[5, true], [3, false], [2, true]]) {
      const txn = await producer.transaction()
      const msgs = keyed(count, `txn-${commit}`)
      await txn.send({ topic, messages: msgs })
      if (commit) {
        await txn.commit()
        committed.push(...msgs.map(m => m.value))
      } else {
        await txn.abort()
      }
    }
  })
  const rc = await read(topic, 7)
  if (JSON.stringify(rc.map(m => m.value)) !== JSON.stringify(committed)) fail(`read_committed read ${JSON.stringify(rc.map(m => m.value))}`)
  const all = await read(topic, 10, { readUncommitted: true })
  const offsets = all.map(m => m.offset)
  if (JSON.stringify(offsets) !== JSON.stringify([0, 1, 2, 3, 4, 6, 7, 8, 10, 11])) fail(`read_uncommitted offsets ${offsets}`)
  await withClient(kafka.admin(), async admin => {
    const offs = await admin.fetchTopicOffsets(topic)
    if (offs[0].high !== '13') fail(`high watermark ${offs[0].high}, want 13 (10 records, 3 markers)`)
  })
}

// floeView: floe's hierarchical topics (not Kafka's). A group subscribed to
// TOPIC/CC54 RYD of a topic with hierarchical.enabled=true reads that key's
// records at their base offsets (0, 2, 5) and commits; after one more record
// of the key (and one of another), a restarted member reads just it.
async function floeView () {
  const topic = name('view')
  const groupId = name('view-id')
  await withClient(kafka.admin(), async admin => {
    const created = await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'hierarchical.enabled', value: 'true' }] }], waitForLeaders: true })
    if (!created) fail('createTopics: not created')
  })
  const keys = ['CC54 RYD', 'NN03 RYB', 'CC54 RYD', 'XX', 'NN03 RYB', 'CC54 RYD']
  const producer = kafka.producer()
  await withClient(producer, () => send(producer, topic, keys.map(key => ({ partition: 0, key, value: 'r', headers: {} }))))
  const view = `${topic}/CC54 RYD`
  const readView = async count => {
    const consumer = kafka.consumer({ groupId })
    return withClient(consumer, async () => {
      await consumer.subscribe({ topics: [view], fromBeginning: true })
      const got = await collect(consumer, count, read => consumer.commitOffsets(positions(view, read)))
      for (const g of got) if (g.key !== 'CC54 RYD') fail(`view answered key ${g.key} at ${g.offset}`)
      return got.map(g => g.offset).sort((a, b) => a - b)
    })
  }
  const first = await readView(3)
  if (JSON.stringify(first) !== '[0,2,5]') fail(`view read offsets ${first}, want 0,2,5`)
  await withClient(producer, () => send(producer, topic, [{ partition: 0, key: 'CC54 RYD', value: 'r', headers: {} }, { partition: 0, key: 'XX', value: 'r', headers: {} }]))
  const again = await readView(1)
  if (JSON.stringify(again) !== '[6]') fail(`restarted member read offsets ${again}, want 6`)
}

// eventually retries f every 100 ms until it resolves or ms have passed.
async function eventually (ms, f) {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await f()
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
}

const checks = [
  ['describe-cluster', describeCluster],
  ['produce-consume-none', produceConsume(CompressionTypes.None)],
  ['produce-consume-gzip', produceConsume(CompressionTypes.GZIP)],
  ['produce-consume-snappy', produceConsume(CompressionTypes.Snappy)],
  ['auto-create-topic', autoCreate],
  ['admin-topics', adminTopics],
  ['offsets-by-timestamp', offsetsByTimestamp],
  ['group-commit-resume', groupCommitResume],
  ['group-rebalance', groupRebalance],
  ['txn-commit-abort', txnCommitAbort],
  ['floe-view', floeView]
]

async function main () {
  const filter = new RegExp(pattern || '')
  let passed = 0
  let failed = 0
  for (const [checkName, f] of checks) {
    // The floe-* checks exercise floe's own features (hierarchical topics).
    if (!filter.test(checkName) || (process.env.CONFORMANCE_KAFKA === '1' && checkName.startsWith('floe-'))) continue
    const start = Date.now()
    let timer
    try {
      await Promise.race([f(), new Promise((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`no result within ${timeoutMs / 1000} s`)), timeoutMs)
      })])
      passed++
      console.log(`PASS ${checkName} (${((Date.now() - start) / 1000).toFixed(1)} s)`)
    } catch (err) {
      failed++
      console.log(`FAIL ${checkName}: ${err.message}`)
    } finally {
      clearTimeout(timer)
    }
  }
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(failed > 0 || passed === 0 ? 1 : 0)
}

main()
