import { GatewayError } from './errors.js';

/**
 * `JSON.stringify(value)` of a part of a client's body, named `field`. JSON.parse reads any depth of
 * nesting, but JSON.stringify recurses and throws past a few thousand levels: such a body is the
 * client's error (400 naming the field), never a 500.
 */
export function jsonText(value: unknown, field: string): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (err instanceof RangeError) throw new GatewayError('invalid_request', `${field} is nested too deeply`, { cause: err });
    throw err;
  }
}
