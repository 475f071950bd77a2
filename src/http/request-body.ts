import type { IncomingMessage } from 'node:http';
import secureJson from 'secure-json-parse';
import { GatewayError, invalidRequest } from '../errors.js';
import { BODY_MESSAGES } from './error-handler.js';
import { mayNamePrototypeKeys } from './prototype-keys.js';

/** A request body as the routes take it: its JSON value, and its text as the client wrote it. */
export interface RequestBody {
  /** Undefined for an empty body. */
  value: unknown;
  /** Without a byte-order mark; undefined for an empty body. */
  text: string | undefined;
}

const NO_BODY: RequestBody = { value: undefined, text: undefined };

/**
 * A body's text read as JSON, whatever Content-Type it came with (curl -d sends a form type); an empty
 * one is no body (a DELETE may carry a JSON Content-Type and nothing else). A `__proto__` key, or a
 * `constructor` holding a `prototype`, is left out of the value (where an assignment could reach an
 * object's prototype) rather than refusing the body: a JSON schema in response_format may name such a
 * property, and the upstream gets the client's text as it was sent. Malformed JSON is a 400.
 */
export function parseRequestBody(body: string): RequestBody {
  if (body === '') return NO_BODY;
  // The text as the client wrote it, without a byte-order mark (the parser drops one too).
  const text = body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
  try {
    // Only a text that could name such a key pays for secure-json-parse's look for them (prototype-keys.ts).
    const value: unknown = mayNamePrototypeKeys(text)
      ? secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' })
      : JSON.parse(text);
    return { value, text };
  } catch {
    throw new GatewayError('invalid_json', BODY_MESSAGES.malformed);
  }
}

const TYPE_NAME = /^[\w!#$%&'*+.^`|~-]+$/;
const SUBTYPE_NAME = /^[\w!#$%&'*+.^`|~-]+\s*$/;

/** Whether a Content-Type header names a well-formed media type (`type/subtype`, parameters after `;`), as Fastify reads one. */
export function isMediaType(header: string): boolean {
  if (header === '' || header === 'undefined') return false;
  const semicolon = header.indexOf(';');
  const media = semicolon === -1 ? header : header.slice(0, semicolon);
  const slash = media.indexOf('/');
  return slash !== -1 && TYPE_NAME.test(media.slice(0, slash).trimStart()) && SUBTYPE_NAME.test(media.slice(slash + 1).trimEnd());
}

const tooLarge = () => new GatewayError('payload_too_large', BODY_MESSAGES.tooLarge);

/**
 * Reads requests' bodies as Fastify reads the bodies of its routes (the same answers): none when the
 * request declares none, a malformed Content-Type refused (415), more than `limitBytes` refused (413),
 * at once when Content-Length says so, and a body shorter or longer than its Content-Length refused (400).
 */
export class RequestBodies {
  /** The last Content-Type read and whether it was one (a client sends the same one with every request). */
  private lastType: string | undefined = undefined;
  private lastWasMediaType = false;

  constructor(private readonly limitBytes: number) {}

  read(req: IncomingMessage): Promise<RequestBody> {
    const { 'content-type': contentType, 'content-length': length, 'transfer-encoding': encoding } = req.headers;
    if (contentType === undefined && encoding === undefined && (length === undefined || length === '0')) return Promise.resolve(NO_BODY);
    if (contentType !== undefined && !this.isMediaType(contentType)) {
      return Promise.reject(new GatewayError('unsupported_media_type', BODY_MESSAGES.mediaType));
    }
    const limitBytes = this.limitBytes;
    const declared = Number(length);
    if (declared > limitBytes) return Promise.reject(tooLarge());
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let received = 0;
      const stop = () => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('error', onError);
      };
      const onData = (chunk: Buffer) => {
        received += chunk.length;
        if (received > limitBytes) {
          stop();
          reject(tooLarge());
          return;
        }
        chunks.push(chunk);
      };
      // The body is whole: its listeners stay (nothing comes after 'end' that they could act on, a
      // settled promise ignores a late error, and they go with the request), where taking three off a
      // stream cost ~3,000 instructions a request (bench/README.md, twenty-ninth session).
      const onEnd = () => {
        if (!Number.isNaN(declared) && received !== declared) return reject(invalidRequest(BODY_MESSAGES.length));
        const text = chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, received).toString('utf8');
        try {
          resolve(parseRequestBody(text));
        } catch (err) {
          reject(err);
        }
      };
      const onError = (err: Error) => {
        stop();
        reject(invalidRequest(`the request body could not be read (${err.message})`));
      };
      req.on('data', onData);
      req.on('end', onEnd);
      req.on('error', onError);
    });
  }

  private isMediaType(header: string): boolean {
    if (header !== this.lastType) {
      this.lastWasMediaType = isMediaType(header);
      this.lastType = header;
    }
    return this.lastWasMediaType;
  }
}
