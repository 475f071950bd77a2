import { afterAll, beforeAll } from 'vitest';
import { startTestGateway, type TestGateway } from './gateway.js';

/** What gatewayOn serves from: an upstream on loopback (ScriptedUpstream, ByteUpstream). */
export interface LoopbackUpstream {
  start(): Promise<string>;
  stop(): Promise<void>;
}

/** The one model of `gatewayOn`: served by provider `up` as `upstreamModel`, at these token prices. */
export interface OneModel {
  id: string;
  upstreamModel: string;
  prompt: string;
  completion: string;
  contextLength?: number;
}

/**
 * For a describe block: a test gateway whose one provider, `up` (OpenAI-style), is `upstream`,
 * serving `model`; both started before the block's tests and stopped after them. `gw` is the
 * gateway, once started.
 */
export function gatewayOn(upstream: LoopbackUpstream, model: OneModel): { readonly gw: TestGateway } {
  let gw: TestGateway | undefined;
  beforeAll(async () => {
    const base = await upstream.start();
    const pricing = { prompt: model.prompt, completion: model.completion };
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: model.id, context_length: model.contextLength, endpoints: [{ provider: 'up', model: model.upstreamModel, pricing }] }],
    });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream.stop();
  });
  return {
    get gw(): TestGateway {
      if (!gw) throw new Error('the gateway is started before the tests');
      return gw;
    },
  };
}
