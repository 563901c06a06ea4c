import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { memoryConfig, parseRateLimit } from '../src/config.ts';
import { forEachStorage, testConfig } from '@svc/testkit';
import { fixture, ok, useServer } from './helpers.ts';

/** GET from a chosen loopback address (another client as far as the server can tell). */
function getFrom(localAddress: string, url: string): Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { localAddress, agent: false }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), headers: res.headers }));
      })
      .on('error', reject);
  });
}

describe('memory rate limit: configuration', () => {
  it('parses the limits notation and is off by default', () => {
    assert.deepEqual(parseRateLimit('100/minute'), { amount: 100, multiples: 1, granularity: 'minute' });
    assert.deepEqual(parseRateLimit('10 per 5 minutes'), { amount: 10, multiples: 5, granularity: 'minute' });
    assert.deepEqual(parseRateLimit('3/hour'), { amount: 3, multiples: 1, granularity: 'hour' });
    assert.throws(() => parseRateLimit('lots'), /invalid rate limit/);
    assert.throws(() => parseRateLimit('0/minute'), /invalid rate limit/);
    const base = testConfig('memory', 'sqlite');
    assert.equal(memoryConfig(base, {}).rateLimit, undefined);
    assert.deepEqual(memoryConfig(base, { MEMORY_RATE_LIMIT: '100/minute' }).rateLimit, { amount: 100, multiples: 1, granularity: 'minute' });
    assert.deepEqual(memoryConfig({ ...base, flags: { rateLimit: '7 per 2 hours' } }, {}).rateLimit, { amount: 7, multiples: 2, granularity: 'hour' });
  });
});

forEachStorage('memory rate limit', (storage) => {
  {
    // A pinned clock: the window never rolls over during the test.
    const s = useServer(storage, { rateLimit: { amount: 12, multiples: 1, granularity: 'minute', now: () => 1_700_000_000_000 } });

    it('answers 429 in slowapi shape once a client exceeds its budget, per client, never on /health', async () => {
      // The reference SDK test: message creation fails within the limit's reach.
      const f = await fixture(s.http); // 3 requests
      const M = `${f.S}/${f.session.id}/messages`;
      let refused: { status: number; body: any; headers: any } | undefined;
      let created = 0;
      for (let i = 0; i < 20 && !refused; i++) {
        const r = await s.http.post(M, { content: `m${i}`, is_user: false });
        if (r.status === 429) refused = { status: r.status, body: r.body, headers: Object.fromEntries(r.headers) };
        else {
          assert.equal(r.status, 200, r.text);
          created++;
        }
      }
      assert.equal(created, 9);
      assert.ok(refused);
      assert.deepEqual(refused.body, { error: 'Rate limit exceeded: 12 per 1 minute' });
      assert.match(refused.headers['retry-after'], /^\d+$/);
      assert.equal((await s.http.get(`${M}`)).status, 429);
      assert.equal((await s.http.get('/health')).status, 200);
      // Another client (another loopback address) has its own budget.
      const other = await getFrom('127.0.0.2', `${s.url.replace('localhost', '127.0.0.1')}${M}`);
      assert.equal(other.status, 200);
      // Nothing was stored past the limit.
      const page = await getFrom('127.0.0.3', `${s.url}${M}?size=100`);
      assert.equal(page.body.total, 9);
    });
  }
});
