// The NCS the MOS gateway tests drive: Sofie's mos-connection (the library broadcasters use to speak MOS
// from code) in strict mode, acting as the newsroom system. Commands come as JSON lines on stdin
// ({"id": 1, "op": "createRO", ...}); replies ({"reply": 1, "ok": true, "result": ...}) and what the device
// sends ({"event": "mosObj", ...}) go out as JSON lines on stdout.
//
// Environment: DEVICE_ID, NCS_ID, DEVICE_PORTS (lower,upper,query), NCS_PORTS (lower,upper,query).
'use strict'
const readline = require('readline')
const { MosConnection, getMosTypes } = require('@mos-connection/connector')

const mosTypes = getMosTypes(true)
const s = (x) => mosTypes.mosString128.create(String(x))
const str = (x) => (x === undefined || x === null ? x : typeof x === 'object' && '_mosString128' in x
	? mosTypes.mosString128.stringify(x) : String(x))
const DEVICE_ID = process.env.DEVICE_ID
const NCS_ID = process.env.NCS_ID
const [dLower, dUpper, dQuery] = process.env.DEVICE_PORTS.split(',').map(Number)
const [nLower, nUpper, nQuery] = process.env.NCS_PORTS.split(',').map(Number)

const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')
let conn = null
let device = null

function plainObject(o) {
	return {
		id: str(o.ID), slug: str(o.Slug), type: o.Type, timeBase: o.TimeBase, revision: o.Revision,
		duration: o.Duration, status: o.Status, air: o.AirStatus, description: str(o.Description),
		paths: (o.Paths || []).map((p) => ({ type: p.Type, description: p.Description, target: p.Target })),
	}
}

async function start() {
	// mos-connection writes its config mosID into <mosID> and the connect id into <ncsID>: with the
	// device's ID here and the NCS's below, the envelope is the spec's (<mosID> the device, <ncsID> the NCS).
	conn = new MosConnection({
		mosID: DEVICE_ID, acceptsConnections: true, profiles: { 0: true, 1: true, 2: true, 4: true },
		ports: { lower: nLower, upper: nUpper, query: nQuery }, strict: true, debug: false,
	})
	conn.on('error', (e) => emit({ event: 'error', text: `${e}` }))
	conn.on('warning', (e) => emit({ event: 'warning', text: `${e}` }))
	conn.on('rawMessage', (source, type, message) => {
		if (type !== 'sent' && /<heartbeat>/.test(message) && String(source).startsWith('incoming')) {
			emit({ event: 'heartbeat', source: String(source) })
		}
	})
	conn.onConnection((dev) => {
		dev.onMOSObjects(async (objects) => {
			for (const o of objects) emit({ event: 'mosObj', obj: plainObject(o) })
			return { ID: objects[0] ? objects[0].ID : s(''), Revision: 1, Status: 'ACK', Description: s('') }
		})
		const status = (kind) => async (st) => {
			emit({ event: kind, ro: str(st.RunningOrderId || st.ID), story: str(st.StoryId || st.ID),
				item: str(st.ID), object: str(st.ObjectId), status: st.Status })
			return { ID: st.RunningOrderId || st.ID, Status: s('OK'), Stories: [] }
		}
		dev.onItemStatus(status('itemStatus'))
		dev.onStoryStatus(status('storyStatus'))
		dev.onRunningOrderStatus(status('roStatus'))
	})
	await conn.init()
	device = await conn.connect({ primary: { id: NCS_ID, host: '127.0.0.1',
		ports: { lower: dLower, upper: dUpper, query: dQuery }, timeout: 5000, heartbeatInterval: 2000 } })
	await new Promise((resolve) => {
		const t = setInterval(() => { if (device.getConnectionStatus().PrimaryConnected) { clearInterval(t); resolve() } }, 50)
	})
	return device.getConnectionStatus()
}

function metadata(m) {
	if (!m) return undefined
	return [{ MosScope: 'PLAYLIST', MosSchema: 'https://omnistudio.invalid/mos/voice', MosPayload: { omnistudio: m } }]
}

function story(x) {
	return { ID: s(x.id), Slug: s(x.slug || x.id), Number: x.number ? s(x.number) : undefined,
		MosExternalMetaData: metadata(x.metadata),
		Items: (x.items || []).map((i) => ({ ID: s(i.id), ObjectID: s(i.obj || i.id), MOSID: i.mos || DEVICE_ID,
			Slug: s(i.slug || i.id) })) }
}

function runningOrder(x) {
	return { ID: s(x.id), Slug: s(x.slug || x.id), MosExternalMetaData: metadata(x.metadata),
		Stories: (x.stories || []).map(story) }
}

const ops = {
	start,
	status: async () => device.getConnectionStatus(),
	dispose: async () => { await conn.dispose(); conn = null; device = null; return true },
	machineInfo: async () => {
		const info = await device.requestMachineInfo()
		return { manufacturer: str(info.manufacturer), model: str(info.model), id: str(info.ID), mosRev: str(info.mosRev),
			swRev: str(info.swRev), profiles: info.supportedProfiles }
	},
	createRO: async (c) => device.sendCreateRunningOrder(runningOrder(c.ro)),
	replaceRO: async (c) => device.sendReplaceRunningOrder(runningOrder(c.ro)),
	deleteRO: async (c) => device.sendDeleteRunningOrder(s(c.ro)),
	metadata: async (c) => device.sendMetadataReplace({ ID: s(c.ro), Slug: s(c.slug), MosExternalMetaData: metadata(c.metadata) }),
	readyToAir: async (c) => device.sendReadyToAir({ ID: s(c.ro), Status: c.air || 'READY' }),
	storySend: async (c) => device.sendRunningOrderStory({ ...story(c.story), RunningOrderId: s(c.ro),
		Body: (c.story.paragraphs || []).map((p) => ({ itemType: 'other', Type: 'p', Content: p })) }),
	insertStories: async (c) => device.sendROInsertStories({ RunningOrderID: s(c.ro), StoryID: s(c.before || '') },
		c.stories.map(story)),
	replaceStories: async (c) => device.sendROReplaceStories({ RunningOrderID: s(c.ro), StoryID: s(c.target) },
		c.stories.map(story)),
	moveStories: async (c) => device.sendROMoveStories({ RunningOrderID: s(c.ro), StoryID: s(c.before || '') },
		c.ids.map(s)),
	swapStories: async (c) => device.sendROSwapStories({ RunningOrderID: s(c.ro) }, s(c.a), s(c.b)),
	deleteStories: async (c) => device.sendRODeleteStories({ RunningOrderID: s(c.ro) }, c.ids.map(s)),
	requestRO: async (c) => {
		const ro = await device.sendRequestRunningOrder(s(c.ro))
		return ro && { id: str(ro.ID), slug: str(ro.Slug), stories: ro.Stories.map((x) => ({ id: str(x.ID),
			slug: str(x.Slug), items: (x.Items || []).map((i) => str(i.ID)) })) }
	},
	requestObject: async (c) => plainObject(await device.sendRequestMOSObject(s(c.obj))),
	requestAll: async () => device.sendRequestAllMOSObjects(),
}

function plain(result) {
	if (result && typeof result === 'object' && 'Status' in result && 'ID' in result) {
		return { id: str(result.ID), status: str(result.Status) }
	}
	return result
}

const input = readline.createInterface({ input: process.stdin })
input.on('line', async (line) => {
	const command = JSON.parse(line)
	try {
		emit({ reply: command.id, ok: true, result: plain(await ops[command.op](command)) })
	} catch (e) {
		emit({ reply: command.id, ok: false, error: `${e && e.message ? e.message : e}` })
	}
})
input.on('close', async () => { if (conn) await conn.dispose(); process.exit(0) })
