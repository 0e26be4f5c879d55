// ESM entry point: the same objects as the CommonJS one (lib/telha.js).
import telha from './telha.js'

export const { Queue, Server, Worker, Subscription, QueueEvents, Permanent, Snooze, Retry, ErrorCode, encodePayload, decodePayload, scheduleNextTimes } = telha
export default telha
