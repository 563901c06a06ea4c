import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { client, forEachStorage } from '@svc/testkit';
import { signupUser, TEST_LIMITS, type TestUser } from './cloud-helpers.ts';
import { gateEntered, gatePrompt, pollPause, releaseGate, startWorkflow, waitJob } from './helpers.ts';

type Srv = Awaited<ReturnType<typeof startWorkflow>>;

/** Sum of the ledger as a client sees it: what the balance must equal. */
async function ledgerSum(u: TestUser): Promise<number> {
  let sum = 0;
  for (let offset = 0; ; offset += 100) {
    const r = await u.http.get(`/api/billing/events?limit=100&offset=${offset}`);
    for (const e of r.body.events) sum += e.type === 'charge' ? -e.amount : e.amount;
    if (!r.body.has_more) return sum;
  }
}

async function waitCharge(u: TestUser, jobId: string): Promise<any> {
  for (let attempt = 0; ; attempt++) {
    const r = await u.http.get('/api/billing/events?type=charge&limit=100');
    const e = r.body.events.find((x: any) => x.job_id === jobId);
    if (e) return e;
    await pollPause(attempt);
  }
}

forEachStorage('hosted runtime: billing and the credit ledger', (storage) => {
  let srv: Srv;
  let a: TestUser;
  let b: TestUser;
  const tag = `${storage}-${process.pid}`;

  before(async () => {
    // A million credits a second: any job that runs at all uses up the 100 free credits.
    srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS, freeTierCredits: '100', creditsPerSecond: '1000000', maxConcurrentJobs: '3', executionThreads: '1' }, { packs: ['gate-pack.mjs'] });
    a = await signupUser(srv.url, 'bill-a');
    b = await signupUser(srv.url, 'bill-b');
  });
  after(async () => {
    for (const g of ['one', 'two']) releaseGate(`bill-${g}-${tag}`);
    await srv.close();
  });

  test('/api/features fills its cloud fields from the configuration', async () => {
    const f = await a.http.get('/api/features');
    assert.equal(f.body.free_tier_credits, 100);
    assert.equal(f.body.max_concurrent_jobs, 3);
    for (const k of ['posthog_api_host', 'workflow_templates_version', 'workflow_templates_source']) assert.ok(k in f.body && f.body[k] === null, k);
    assert.equal(typeof f.body.max_upload_size, 'number');
  });

  test('free tier, a charge per executed job, 402 when credits run out, top-up, and the balance is the ledger’s sum', async () => {
    assert.deepEqual((await a.http.get('/api/billing/balance')).body, { credits_remaining: 100, credits_used: 0, credits_total: 100 });
    const free = (await a.http.get('/api/billing/events')).body;
    assert.equal(free.total, 1);
    assert.equal(free.events[0].type, 'credit');
    assert.equal(free.events[0].amount, 100);

    const gate = `bill-one-${tag}`;
    const job = (await a.http.post('/api/prompt', { prompt: gatePrompt(gate) })).body.prompt_id;
    await gateEntered(gate);
    releaseGate(gate);
    assert.equal((await waitJob(a.http, job)).status, 'completed');
    const charge = await waitCharge(a, job);
    assert.ok(charge.amount >= 1000, `charged ${charge.amount}`);
    assert.ok(charge.description.includes('s)'));
    const bal = (await a.http.get('/api/billing/balance')).body;
    assert.equal(bal.credits_remaining, 100 - charge.amount);
    assert.equal(bal.credits_used, charge.amount);
    assert.equal(bal.credits_remaining, await ledgerSum(a));

    const jobsBefore = (await a.http.get('/api/jobs')).body.pagination.total;
    const refused = await a.http.post('/api/prompt', { prompt: gatePrompt('never') });
    assert.equal(refused.status, 402);
    assert.equal(refused.body.error.type, 'insufficient_credits');
    assert.match(refused.body.error.message, /Insufficient credits/);
    assert.equal(refused.body.error.extra_info.credits_remaining, bal.credits_remaining);
    assert.deepEqual(refused.body.node_errors, {});
    assert.equal((await a.http.get('/api/jobs')).body.pagination.total, jobsBefore, 'a refused prompt is not queued');
    // The OpenAPI document says so (hosted runtime only).
    const doc = (await client(srv.url).get('/openapi.json')).body;
    assert.match(doc.paths['/api/prompt'].post.responses['402'].description, /^\[cloud-only\] /);
    assert.ok(doc.paths['/api/prompt'].post.responses['400']);
    // B is a different workspace with its own free credits.
    assert.equal((await b.http.get('/api/billing/balance')).body.credits_remaining, 100);

    const top = await a.http.post('/api/billing/topup', { amount: charge.amount - 50 });
    assert.equal(top.status, 200, top.text);
    assert.equal(top.body.credits_remaining, 50);
    assert.equal(top.body.credits_remaining, await ledgerSum(a));
    const topEvent = (await a.http.get('/api/billing/events?type=topup')).body.events[0];
    assert.equal(topEvent.amount, charge.amount - 50);
    const op = await a.http.get(`/api/billing/ops/${topEvent.op_id}`);
    assert.equal(op.status, 200);
    assert.equal(op.body.status, 'completed');
    assert.equal(op.body.type, 'topup');
    assert.equal(op.body.amount, charge.amount - 50);
    assert.ok(op.body.completed_at);
    assert.equal((await b.http.get(`/api/billing/ops/${topEvent.op_id}`)).status, 404);
    assert.deepEqual((await a.http.get('/api/billing/ops/nope')).body, { error: 'Billing operation not found', code: 'not_found', details: {} });

    // Credits again: prompts are accepted. A job cancelled while pending (behind the one execution slot) is never charged.
    const gate2 = `bill-two-${tag}`;
    const running = await a.http.post('/api/prompt', { prompt: gatePrompt(gate2) });
    assert.equal(running.status, 200, running.text);
    await gateEntered(gate2);
    const pending = (await a.http.post('/api/prompt', { prompt: gatePrompt(`${gate2}-p`) })).body.prompt_id;
    assert.equal((await a.http.post(`/api/jobs/${pending}/cancel`)).body.status, 'cancelled');
    releaseGate(gate2);
    await waitJob(a.http, running.body.prompt_id);
    await waitCharge(a, running.body.prompt_id);
    const charges = (await a.http.get('/api/billing/events?type=charge&limit=100')).body.events;
    assert.ok(!charges.some((e: any) => e.job_id === pending));
    assert.equal(charges.filter((e: any) => e.job_id === running.body.prompt_id).length, 1, 'charged once');
    assert.equal((await a.http.get('/api/billing/balance')).body.credits_remaining, await ledgerSum(a));

    for (const body of [{}, { amount: 0 }, { amount: -5 }, { amount: 1.5 }, { amount: '10' }, { amount: 1e300 }, [1]]) {
      const bad = await a.http.post('/api/billing/topup', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.equal(bad.body.code, 'invalid_request');
    }
  });

  test('plans, preview, subscribe, cancel at period end, resubscribe, status, portal', async () => {
    const plans = await client(srv.url).get('/api/billing/plans');
    assert.equal(plans.status, 200);
    assert.ok(plans.body.length >= 2);
    for (const p of plans.body) for (const k of ['id', 'name', 'credits_per_month', 'price_cents', 'currency', 'features']) assert.ok(k in p, k);
    const [standard, creator] = plans.body;

    const s0 = (await b.http.get('/api/billing/status')).body;
    assert.equal(s0.subscription, null);
    assert.equal(s0.has_payment_method, false);
    assert.equal(s0.balance.credits_remaining, 100);
    const preview = await b.http.post('/api/billing/preview-subscribe', { plan_id: standard.id });
    assert.equal(preview.status, 200);
    assert.equal(preview.body.amount_due, standard.price_cents);
    assert.equal(preview.body.proration_amount, 0);
    assert.ok(Date.parse(preview.body.next_billing_date) > Date.now());

    const sub = await b.http.post('/api/billing/subscribe', { plan_id: standard.id });
    assert.equal(sub.status, 200, sub.text);
    assert.match(sub.body.id, /^sub_/);
    assert.equal(sub.body.status, 'active');
    assert.equal(sub.body.plan_id, standard.id);
    assert.equal(sub.body.cancel_at_period_end, false);
    assert.ok(Date.parse(sub.body.current_period_end) > Date.parse(sub.body.current_period_start));
    const bal = (await b.http.get('/api/billing/balance')).body;
    assert.equal(bal.credits_remaining, 100 + standard.credits_per_month);
    assert.equal(bal.credits_remaining, await ledgerSum(b));
    const st = (await b.http.get('/api/billing/status')).body;
    assert.equal(st.subscription.id, sub.body.id);
    assert.equal(st.has_payment_method, true);
    const again = await b.http.post('/api/billing/subscribe', { plan_id: standard.id });
    assert.equal(again.status, 400);
    assert.equal(again.body.code, 'already_subscribed');
    const up = (await b.http.post('/api/billing/preview-subscribe', { plan_id: creator.id })).body;
    assert.ok(up.proration_amount < 0 && up.amount_due < creator.price_cents, JSON.stringify(up));

    const cancelled = await b.http.post('/api/billing/subscription/cancel');
    assert.equal(cancelled.body.status, 'active', 'active until the end of the period');
    assert.equal(cancelled.body.cancel_at_period_end, true);
    const back = await b.http.post('/api/billing/subscription/resubscribe');
    assert.equal(back.body.cancel_at_period_end, false);
    assert.equal((await b.http.post('/api/billing/subscription/resubscribe')).body.code, 'not_cancelled');
    assert.equal((await a.http.post('/api/billing/subscription/cancel')).body.code, 'no_active_subscription');

    // Concurrent subscriptions of one workspace: one wins, the others change and pay nothing.
    const c = await signupUser(srv.url, 'bill-c');
    const tries = await Promise.all(Array.from({ length: 6 }, () => c.http.post('/api/billing/subscribe', { plan_id: creator.id })));
    assert.equal(tries.filter((r) => r.status === 200).length, 1, tries.map((r) => `${r.status} ${r.body.code ?? ''}`).join(', '));
    for (const r of tries) if (r.status !== 200) assert.ok(['already_subscribed', 'subscription_changed'].includes(r.body.code), r.text);
    assert.equal((await c.http.get('/api/billing/balance')).body.credits_remaining, 100 + creator.credits_per_month);
    assert.equal((await c.http.get('/api/billing/events?type=subscription')).body.total, 1);
    const paid = (await c.http.get('/api/billing/events?type=subscription')).body.events[0].op_id;
    assert.equal((await c.http.get(`/api/billing/ops/${paid}`)).body.type, 'subscribe');
    const tops = await Promise.all(Array.from({ length: 5 }, () => c.http.post('/api/billing/topup', { amount: 10 })));
    assert.ok(tops.every((r) => r.status === 200));
    const after = (await c.http.get('/api/billing/balance')).body.credits_remaining;
    assert.equal(after, 100 + creator.credits_per_month + 50);
    assert.equal(after, await ledgerSum(c));

    for (const body of [{}, { plan_id: 'nope' }, { plan_id: 5 }, { plan_id: creator.id, payment_method_id: 7 }]) {
      const bad = await b.http.post('/api/billing/subscribe', body);
      assert.equal(bad.status, 400, JSON.stringify(body));
    }
    assert.equal((await b.http.post('/api/billing/preview-subscribe', { plan_id: 'nope' })).body.code, 'invalid_plan');
    const portal = await b.http.post('/api/billing/payment-portal');
    assert.equal(portal.status, 200);
    assert.match(portal.body.url, /^http:\/\/127\.0\.0\.1:\d+\/api\/billing\/status$/);
    const types = (await b.http.get('/api/billing/events?type=subscription')).body;
    assert.equal(types.total, 1);
    assert.equal(types.events[0].amount, standard.credits_per_month);
    assert.equal((await b.http.get('/api/billing/events?type=bogus')).status, 400);
    assert.equal((await b.http.get('/api/billing/events?limit=0')).status, 400);
    const page = (await b.http.get('/api/billing/events?limit=1')).body;
    assert.equal(page.events.length, 1);
    assert.equal(page.has_more, true);
    for (const url of ['/api/billing/balance', '/api/billing/status', '/api/billing/events']) assert.equal((await client(srv.url).get(url)).status, 401, url);
    assert.equal((await client(srv.url).post('/api/billing/topup', { amount: 5 })).status, 401);
  });
});

forEachStorage('hosted runtime: billing periods', (storage) => {
  test('a period renews when it has ended: paid and granted once even under concurrent reads; a cancelled subscription ends at its period end', async () => {
    const srv = await startWorkflow(storage, { runtime: 'cloud', authRateLimits: TEST_LIMITS, freeTierCredits: '100', billingPeriodMs: '1000' });
    try {
      const u = await signupUser(srv.url, 'renew');
      const sub = (await u.http.post('/api/billing/subscribe', { plan_id: 'standard' })).body;
      assert.equal(sub.status, 'active');
      const end = Date.parse(sub.current_period_end);
      assert.equal(end - Date.parse(sub.current_period_start), 1000);
      // Wait for the period to end (a condition on the clock, polled).
      while (Date.now() <= end) await new Promise((r) => setTimeout(r, 50));
      const reads = await Promise.all(Array.from({ length: 6 }, () => u.http.get('/api/billing/status')));
      for (const r of reads) assert.equal(r.status, 200);
      const st = (await u.http.get('/api/billing/status')).body;
      assert.equal(st.subscription.id, sub.id);
      assert.ok(Date.parse(st.subscription.current_period_start) >= end);
      const events = (await u.http.get('/api/billing/events?type=subscription&limit=100')).body.events;
      assert.ok(events.length >= 2);
      const ops = new Set(events.map((e: any) => e.op_id));
      assert.equal(ops.size, events.length, 'every grant was paid by its own operation');
      for (const id of ops) assert.equal((await u.http.get(`/api/billing/ops/${id}`)).body.status, 'completed');
      assert.equal(st.balance.credits_remaining, await ledgerSum(u));
      // Renewals happen once per period: as many grants as periods begun.
      const periods = Math.floor((Date.parse(st.subscription.current_period_start) - Date.parse(sub.current_period_start)) / 1000) + 1;
      assert.ok(events.length <= periods, `${events.length} grants for ${periods} periods`);

      const cancelled = (await u.http.post('/api/billing/subscription/cancel')).body;
      assert.equal(cancelled.cancel_at_period_end, true);
      let now = (await u.http.get('/api/billing/status')).body;
      while (now.subscription.status === 'active') {
        await new Promise((r) => setTimeout(r, 50));
        now = (await u.http.get('/api/billing/status')).body;
      }
      assert.equal(now.subscription.status, 'cancelled');
      assert.equal((await u.http.post('/api/billing/subscription/resubscribe')).body.code, 'not_cancelled');
      const again = await u.http.post('/api/billing/subscribe', { plan_id: 'standard' });
      assert.equal(again.status, 200);
      assert.notEqual(again.body.id, sub.id);
    } finally {
      await srv.close();
    }
  });
});

test('local runtime: billing paths answer 404 and /features has no cloud fields', async () => {
  const srv = await startWorkflow('sqlite');
  try {
    for (const [m, p] of [['GET', '/api/billing/plans'], ['GET', '/api/billing/balance'], ['POST', '/api/billing/topup'], ['GET', '/api/billing/ops/x'], ['POST', '/api/billing/subscription/cancel']]) {
      assert.equal((await srv.http.request(m!, p!)).status, 404, `${m} ${p}`);
    }
    const f = (await srv.http.get('/api/features')).body;
    assert.ok(!('free_tier_credits' in f));
  } finally {
    await srv.close();
  }
});
