import type { LogCapture } from './gateway.js';

/**
 * The access-log line of the request with this id (`msg: "request"`), once it is written: the line goes
 * out when the response closes, a moment after the client has read the answer.
 */
export async function requestLogLine(log: LogCapture, reqId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const line = log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.reqId === reqId && l.msg === 'request');
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no log line for ${reqId}`);
}
