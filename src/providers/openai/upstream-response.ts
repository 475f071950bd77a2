import { errors as undiciErrors, type Dispatcher } from 'undici';
import type { CancelSignal } from '../../cancellation.js';

/** Told of an upstream body's reads as they arrive, then of its end or its failure (one of them, once). */
export interface BodyReader {
  data(chunk: Buffer): void;
  end(): void;
  error(err: unknown): void;
}

/** An upstream answer's body, read straight from the connection: no stream object stands between. */
export interface UpstreamBody {
  /** Hands the body to `reader`: the reads that came before first, then each as it arrives. Once a body. */
  read(reader: BodyReader): void;
  /** The whole body as UTF-8 text; past `limitBytes` what was read is given and the rest is dropped (the connection closed). */
  text(limitBytes?: number): Promise<string>;
  /** Stops taking reads from the connection until `resume` (backpressure). */
  pause(): void;
  resume(): void;
  readonly paused: boolean;
  /** Drops the rest of the body (the connection is closed); the reader is told nothing more. */
  destroy(): void;
}

export interface UpstreamResponse {
  statusCode: number;
  /** Header names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  body: UpstreamBody;
}

/**
 * One request on an undici dispatcher, its answer delivered to a handler of ours rather than through
 * `request()`'s Readable body (a stream object, its buffering and events a request: about a quarter of
 * what undici costs a request here). Resolves when the status and headers came; rejects with undici's
 * error, or with the signal's reason when `signal` cancels it first. Cancelled later, the body fails
 * with that reason.
 */
export function requestUpstream(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions, signal: CancelSignal): Promise<UpstreamResponse> {
  return new Promise((resolve, reject) => {
    const exchange = new Exchange(signal, resolve, reject);
    if (signal.aborted) return reject(signal.reason);
    signal.once('abort', exchange.onAbort);
    try {
      dispatcher.dispatch(options, exchange);
    } catch (err) {
      signal.off('abort', exchange.onAbort);
      reject(err);
    }
  });
}

class Exchange implements Dispatcher.DispatchHandler, UpstreamBody {
  private controller: Dispatcher.DispatchController | undefined;
  private started = false;
  /** Over: ended, failed or destroyed. */
  private over = false;
  private destroyed = false;
  private pausedByReader = false;
  private reader: BodyReader | undefined;
  /** What the reader has not been given yet (it came before the reader, or while paused): the reads, then how the body ended. */
  private held: Buffer[] = [];
  private heldEnd: { failed: false } | { failed: true; err: unknown } | undefined;

  constructor(
    private readonly signal: CancelSignal,
    private readonly resolve: (r: UpstreamResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {}

  readonly onAbort = (): void => {
    // Before the request reached a connection there is nothing to cut yet: onRequestStart does it.
    this.controller?.abort(this.signal.reason as Error);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.signal.aborted) controller.abort(this.signal.reason as Error);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200) return; // an informational answer: the real one follows
    this.started = true;
    this.resolve({ statusCode, headers, body: this });
  }

  /** Whether the reader may be given something now. */
  private get flowing(): boolean {
    return this.reader !== undefined && this.held.length === 0 && !this.paused;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.destroyed) return;
    // A pause takes effect when this call returns: a read that comes in the meantime waits here.
    if (this.flowing) this.reader?.data(chunk);
    else this.held.push(chunk);
  }

  onResponseEnd(): void {
    this.finish();
    if (this.destroyed) return;
    if (this.flowing) this.reader?.end();
    else this.heldEnd = { failed: false };
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.finish();
    if (!this.started) return this.reject(err);
    if (this.destroyed) return;
    if (this.flowing) this.reader?.error(err);
    else this.heldEnd = { failed: true, err };
  }

  /** Gives the reader what was held for it, until it pauses again. */
  private flush(): void {
    const reader = this.reader;
    if (!reader) return;
    while (this.held.length > 0) {
      if (this.destroyed || this.paused) return;
      reader.data(this.held.shift() as Buffer);
    }
    const end = this.heldEnd;
    if (!end || this.destroyed || this.paused) return;
    this.heldEnd = undefined;
    if (end.failed) reader.error(end.err);
    else reader.end();
  }

  private finish(): void {
    this.over = true;
    this.signal.off('abort', this.onAbort);
  }

  read(reader: BodyReader): void {
    if (this.reader) throw new Error('an upstream body is read once');
    this.reader = reader;
    this.flush();
  }

  text(limitBytes = Infinity): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      this.read({
        data: (chunk) => {
          chunks.push(chunk);
          bytes += chunk.length;
          if (bytes > limitBytes) {
            this.destroy();
            resolve(Buffer.concat(chunks).toString('utf8'));
          }
        },
        end: () => resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8')),
        error: reject,
      });
    });
  }

  // The reader's pause is ours: it holds what undici hands over meanwhile (and, while the answer is
  // still coming, stops undici reading the connection). Once the answer is over, undici is not told:
  // its connection may be serving another request by then, not ours to pause or resume.
  pause(): void {
    this.pausedByReader = true;
    if (!this.over) this.controller?.pause();
  }

  resume(): void {
    this.pausedByReader = false;
    if (!this.over) this.controller?.resume();
    this.flush();
  }

  get paused(): boolean {
    return this.pausedByReader;
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.held = [];
    if (!this.over) this.controller?.abort(new undiciErrors.RequestAbortedError());
  }
}
