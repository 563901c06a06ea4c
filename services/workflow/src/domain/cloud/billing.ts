import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';

/**
 * Credits of the hosted runtime. The ledger is append-only: every grant,
 * top-up, subscription and charge is one row of `billing_events` with a
 * signed `delta`, and a workspace's balance is, by definition, the sum of
 * its rows (nothing else stores a balance that could drift). A job is
 * charged once (`dedup_key` job:<id> is unique per workspace), by its
 * execution time at a configurable rate. Money moves only through a
 * PaymentProvider; the built-in one records payments without charging
 * anyone, so the whole flow runs end to end without a payment processor.
 */
export type EventType = 'charge' | 'credit' | 'refund' | 'topup' | 'subscription';
export const EVENT_TYPES: EventType[] = ['charge', 'credit', 'refund', 'topup', 'subscription'];

export interface BillingConfig {
  /** Credits every workspace receives once (`--free-tier-credits`). */
  freeTierCredits: number;
  /** Credits charged per second of execution (`--credits-per-second`, may be fractional). */
  creditsPerSecond: number;
  /** Jobs one workspace may run at the same time (`--max-concurrent-jobs`), reported by /api/features. */
  maxConcurrentJobs: number;
  /** Price of one top-up credit in cents (`--credit-price-cents`). */
  creditPriceCents: number;
  /** Length of a subscription period (`--billing-period-ms`). */
  periodMs: number;
}

function numberFlag(v: unknown, name: string, dflt: number, min: number, integer: boolean): number {
  if (typeof v !== 'string') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${v}`);
  return n;
}

export function billingConfig(f: Record<string, unknown>, env = process.env): BillingConfig {
  return {
    freeTierCredits: numberFlag(f.freeTierCredits ?? env.WORKFLOW_FREE_TIER_CREDITS, 'free-tier-credits', 1000, 0, true),
    creditsPerSecond: numberFlag(f.creditsPerSecond ?? env.WORKFLOW_CREDITS_PER_SECOND, 'credits-per-second', 1, 0, false),
    maxConcurrentJobs: numberFlag(f.maxConcurrentJobs ?? env.WORKFLOW_MAX_CONCURRENT_JOBS, 'max-concurrent-jobs', 1, 1, true),
    creditPriceCents: numberFlag(f.creditPriceCents, 'credit-price-cents', 1, 0, true),
    periodMs: numberFlag(f.billingPeriodMs, 'billing-period-ms', PERIOD_MS, 1000, true),
  };
}

export interface Plan {
  id: string;
  name: string;
  description: string;
  credits_per_month: number;
  price_cents: number;
  currency: string;
  features: string[];
}

export const PLANS: Plan[] = [
  { id: 'standard', name: 'Standard', description: 'For individuals running workflows regularly.', credits_per_month: 10_000, price_cents: 2_000, currency: 'usd', features: ['10,000 credits every month', 'Private workflows and assets'] },
  { id: 'creator', name: 'Creator', description: 'For heavier use and small teams.', credits_per_month: 40_000, price_cents: 7_000, currency: 'usd', features: ['40,000 credits every month', 'Team workspaces', 'Priority support'] },
  { id: 'pro', name: 'Pro', description: 'For production use.', credits_per_month: 120_000, price_cents: 18_000, currency: 'usd', features: ['120,000 credits every month', 'Team workspaces', 'Priority support', 'API keys for automation'] },
];

/** A billing period: 30 days unless configured (`--billing-period-ms`, for trials and tests). */
export const PERIOD_MS = 30 * 86_400_000;

/** The seam to a payment processor. */
export interface PaymentProvider {
  readonly name: string;
  /** Charges the workspace's payment method; `ref` identifies the payment at the processor. */
  charge(owner: string, p: { amountCents: number; description: string; paymentMethodId?: string }): Promise<{ ok: true; ref: string } | { ok: false; error: string }>;
  /** Where the workspace manages its payment methods and invoices. */
  portalUrl(owner: string, baseUrl: string): string;
}

/** Records every payment as made without charging anyone (no processor configured): for self-hosting and tests. */
export class RecordingProvider implements PaymentProvider {
  readonly name = 'builtin';
  async charge(): Promise<{ ok: true; ref: string }> {
    return { ok: true, ref: `builtin_${randomUUID()}` };
  }
  portalUrl(_owner: string, baseUrl: string): string {
    // There is no portal without a processor: the billing status is what there is to see.
    return `${baseUrl}/api/billing/status`;
  }
}

export class BillingError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Account {
  owner: string;
  planId: string | null;
  subscriptionId: string | null;
  subscriptionStatus: 'active' | 'cancelled' | 'past_due' | 'trialing' | null;
  periodStart: number | null;
  periodEnd: number | null;
  cancelAtPeriodEnd: boolean;
  paymentMethodId: string | null;
}

function isUnique(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || /UNIQUE constraint failed/.test(e?.message ?? '');
}

const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

export class Billing {
  /** Workspaces whose account row and free-tier grant exist (both are idempotent; this only saves the writes). */
  private readonly known = new Set<string>();

  constructor(
    private readonly db: () => Kysely<any>,
    readonly cfg: BillingConfig,
    readonly provider: PaymentProvider = new RecordingProvider(),
  ) {}

  /** Appends one event; false when its dedup key was used already (the event happened once). */
  async append(owner: string, e: { type: EventType; delta: number; description: string; jobId?: string; opId?: string; dedupKey?: string }, db: Kysely<any> = this.db()): Promise<boolean> {
    try {
      await db
        .insertInto('billing_events')
        .values({ id: randomUUID(), owner, type: e.type, delta: Math.trunc(e.delta), description: e.description, job_id: e.jobId ?? null, op_id: e.opId ?? null, dedup_key: e.dedupKey ?? null, created_at: Date.now() })
        .execute();
      return true;
    } catch (err) {
      if (e.dedupKey && isUnique(err)) return false;
      throw err;
    }
  }

  /** The workspace's account row and its free-tier grant, made once (on first use); renews or ends an expired period. */
  async account(owner: string): Promise<Account> {
    const now = Date.now();
    if (!this.known.has(owner)) {
      await this.db().insertInto('billing_accounts').values({ owner, cancel_at_period_end: 0, created_at: now, updated_at: now }).onConflict((oc) => oc.column('owner').doNothing()).execute();
      if (this.cfg.freeTierCredits > 0) await this.append(owner, { type: 'credit', delta: this.cfg.freeTierCredits, description: 'Free tier credits', dedupKey: 'free-tier' });
      if (this.known.size > 100_000) this.known.clear();
      this.known.add(owner);
    }
    let a = await this.read(owner);
    if (periodOver(a, now)) {
      if (a.cancelAtPeriodEnd) {
        await this.update(owner, { subscription_status: 'cancelled' });
      } else {
        const plan = PLANS.find((p) => p.id === a.planId);
        if (plan) await this.renew(owner, a, plan, now);
      }
      a = await this.read(owner);
    }
    return a;
  }

  private async renew(owner: string, a: Account, plan: Plan, now: number): Promise<void> {
    // Periods missed while nobody looked are skipped: one renewal, paid and granted once.
    let start = a.periodEnd!;
    while (start + this.cfg.periodMs <= now) start += this.cfg.periodMs;
    // Of concurrent readers of the expired period, the one that moves it renews; the others see the new period.
    const moved = await this.db()
      .updateTable('billing_accounts')
      .set({ period_start: start, period_end: start + this.cfg.periodMs, updated_at: now })
      .where('owner', '=', owner)
      .where('subscription_id', '=', a.subscriptionId)
      .where('period_end', '=', a.periodEnd)
      .executeTakeFirst();
    if (Number(moved.numUpdatedRows) === 0) return;
    const op = await this.pay(owner, 'renewal', plan.price_cents, a.paymentMethodId, plan.id, `${plan.name} plan renewal`);
    if (op.status !== 'completed') {
      await this.update(owner, { subscription_status: 'past_due' });
      return;
    }
    await this.append(owner, { type: 'subscription', delta: plan.credits_per_month, description: `${plan.name} plan: monthly credits`, opId: op.id, dedupKey: `sub:${a.subscriptionId}:${start}` });
  }

  private async read(owner: string): Promise<Account> {
    return toAccount(owner, await this.db().selectFrom('billing_accounts').selectAll().where('owner', '=', owner).executeTakeFirstOrThrow());
  }

  private async update(owner: string, set: Record<string, unknown>): Promise<void> {
    await this.db().updateTable('billing_accounts').set({ ...set, updated_at: Date.now() }).where('owner', '=', owner).execute();
  }

  /**
   * The balance alone, for the check of every new prompt: the account and its
   * sum in one query once the account exists and its period needs no renewal.
   */
  private async remaining(owner: string): Promise<{ credits_remaining: number }> {
    if (!this.known.has(owner)) return this.balance(owner);
    // The balance column follows the ledger (a trigger in each insert's transaction, migration 009): one row, not a sum over the history.
    const r = await this.db().selectFrom('billing_accounts').selectAll().where('owner', '=', owner).executeTakeFirst();
    if (!r || periodOver(toAccount(owner, r), Date.now())) return this.balance(owner);
    return { credits_remaining: Number(r.balance) };
  }

  async balance(owner: string): Promise<{ credits_remaining: number; credits_used: number; credits_total: number }> {
    await this.account(owner);
    const r = await this.db()
      .selectFrom('billing_events')
      .select([
        sql<number>`coalesce(sum(delta), 0)`.as('balance'),
        sql<number>`coalesce(sum(case when delta < 0 then -delta else 0 end), 0)`.as('used'),
        sql<number>`coalesce(sum(case when delta > 0 then delta else 0 end), 0)`.as('total'),
      ])
      .where('owner', '=', owner)
      .executeTakeFirstOrThrow();
    return { credits_remaining: Number(r.balance), credits_used: Number(r.used), credits_total: Number(r.total) };
  }

  /** New prompts need a positive balance. */
  async checkCanRun(owner: string): Promise<void> {
    const b = await this.remaining(owner);
    if (b.credits_remaining <= 0) throw new BillingError(402, 'insufficient_credits', 'Insufficient credits: top up or subscribe to a plan to run more prompts', { credits_remaining: b.credits_remaining });
  }

  /** Credits for `ms` of execution. */
  cost(ms: number): number {
    return Math.ceil((Math.max(0, ms) * this.cfg.creditsPerSecond) / 1000);
  }

  /** Charges a finished job once, by its execution time. */
  async chargeJob(owner: string, jobId: string, ms: number): Promise<boolean> {
    const credits = this.cost(ms);
    const row = { id: randomUUID(), owner, type: 'charge', delta: -credits, description: `Job execution (${(ms / 1000).toFixed(3)} s)`, job_id: jobId, op_id: null, dedup_key: `job:${jobId}`, created_at: Date.now() };
    return new Promise((resolve, reject) => {
      this.charges.push({ row, resolve, reject });
      this.flushCharges();
    });
  }

  private charges: Array<{ row: Record<string, unknown>; resolve: (charged: boolean) => void; reject: (err: unknown) => void }> = [];
  private charging = false;

  /**
   * Charges of jobs that end together go in one insert: one statement in
   * flight, the ones ending meanwhile gather for the next. A job charged
   * before (same dedup key) is not charged again.
   */
  private flushCharges(): void {
    if (this.charging || this.charges.length === 0) return;
    // In owner order: each row's trigger locks its account, and two processes' batches must take those locks in one order.
    const batch = this.charges.splice(0, 500).sort((a, b) => (String(a.row.owner) < String(b.row.owner) ? -1 : String(a.row.owner) > String(b.row.owner) ? 1 : 0));
    this.charging = true;
    void this.db()
      .insertInto('billing_events')
      .values(batch.map((b) => b.row))
      .onConflict((oc) => oc.columns(['owner', 'dedup_key']).doNothing())
      .returning('id')
      .execute()
      .then(
        (rows) => {
          const stored = new Set(rows.map((r) => r.id as string));
          for (const b of batch) b.resolve(stored.has(b.row.id as string));
        },
        (err) => {
          for (const b of batch) b.reject(err);
        },
      )
      .finally(() => {
        this.charging = false;
        this.flushCharges();
      });
  }

  async events(owner: string, q: { type?: EventType; limit: number; offset: number }): Promise<{ events: Record<string, unknown>[]; total: number; has_more: boolean }> {
    await this.account(owner);
    let base = this.db().selectFrom('billing_events').where('owner', '=', owner);
    if (q.type) base = base.where('type', '=', q.type);
    const total = Number((await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    let sel = base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit);
    if (q.offset > 0) sel = sel.offset(q.offset);
    const rows = await sel.execute();
    const events = rows.map((r) => {
      const e: Record<string, unknown> = { id: r.id, type: r.type, amount: Math.abs(Number(r.delta)), description: r.description ?? '', job_id: r.job_id ?? null, created_at: iso(Number(r.created_at)) };
      // The billing operation that paid for it (GET /api/billing/ops/{id}).
      if (r.op_id) e.op_id = r.op_id;
      return e;
    });
    return { events, total, has_more: q.offset + rows.length < total };
  }

  /** Records a billing operation and pays it through the provider. */
  private async pay(owner: string, kind: string, amountCents: number, paymentMethodId: string | null, planId: string | null, description: string, credits?: number): Promise<{ id: string; status: 'completed' | 'failed'; error?: string }> {
    const id = randomUUID();
    const now = Date.now();
    await this.db().insertInto('billing_ops').values({ id, owner, kind, status: 'pending', amount: credits ?? amountCents, plan_id: planId, provider: this.provider.name, created_at: now }).execute();
    const r = await this.provider.charge(owner, { amountCents, description, paymentMethodId: paymentMethodId ?? undefined });
    if (!r.ok) {
      await this.db().updateTable('billing_ops').set({ status: 'failed', error: r.error, completed_at: Date.now() }).where('id', '=', id).execute();
      return { id, status: 'failed', error: r.error };
    }
    await this.db().updateTable('billing_ops').set({ status: 'completed', provider_ref: r.ref, completed_at: Date.now() }).where('id', '=', id).execute();
    return { id, status: 'completed' };
  }

  async topUp(owner: string, credits: number): Promise<{ credits_remaining: number; credits_used: number; credits_total: number }> {
    const a = await this.account(owner);
    const op = await this.pay(owner, 'topup', credits * this.cfg.creditPriceCents, a.paymentMethodId, null, `${credits} credits`, credits);
    if (op.status !== 'completed') throw new BillingError(402, 'payment_failed', `The payment failed: ${op.error}`, { op_id: op.id });
    await this.append(owner, { type: 'topup', delta: credits, description: `Top-up of ${credits} credits`, opId: op.id, dedupKey: `op:${op.id}` });
    if (!a.paymentMethodId) await this.update(owner, { payment_method_id: this.provider.name });
    return this.balance(owner);
  }

  async op(owner: string, id: string): Promise<Record<string, unknown> | null> {
    const r = await this.db().selectFrom('billing_ops').selectAll().where('owner', '=', owner).where('id', '=', id).executeTakeFirst();
    if (!r) return null;
    return { id: r.id, status: r.status, type: r.kind, amount: Number(r.amount ?? 0), created_at: iso(Number(r.created_at)), completed_at: iso(r.completed_at === null ? null : Number(r.completed_at)), ...(r.error ? { error: r.error } : {}) };
  }

  subscriptionOf(a: Account): Record<string, unknown> | null {
    if (!a.subscriptionId || !a.planId || !a.subscriptionStatus) return null;
    const plan = PLANS.find((p) => p.id === a.planId);
    return { id: a.subscriptionId, status: a.subscriptionStatus, plan_id: a.planId, plan_name: plan?.name ?? a.planId, current_period_start: iso(a.periodStart), current_period_end: iso(a.periodEnd), cancel_at_period_end: a.cancelAtPeriodEnd };
  }

  async status(owner: string): Promise<Record<string, unknown>> {
    const a = await this.account(owner);
    return { subscription: this.subscriptionOf(a), balance: await this.balance(owner), has_payment_method: a.paymentMethodId !== null };
  }

  plan(id: unknown): Plan {
    const p = PLANS.find((x) => x.id === id);
    if (!p) throw new BillingError(400, 'invalid_plan', `Unknown plan_id: valid plans are ${PLANS.map((x) => x.id).join(', ')}`, { field: 'plan_id' });
    return p;
  }

  /** What subscribing to `plan` now costs: its price less the unused part of the current plan's period. */
  async preview(owner: string, plan: Plan): Promise<Record<string, unknown>> {
    const a = await this.account(owner);
    const now = Date.now();
    let proration = 0;
    const current = a.subscriptionStatus === 'active' ? PLANS.find((p) => p.id === a.planId) : undefined;
    if (current && a.periodEnd !== null && a.periodEnd > now) proration = -Math.round((current.price_cents * (a.periodEnd - now)) / this.cfg.periodMs);
    return { plan_id: plan.id, plan_name: plan.name, amount_due: Math.max(0, plan.price_cents + proration), proration_amount: proration, currency: plan.currency, next_billing_date: iso(now + this.cfg.periodMs) };
  }

  async subscribe(owner: string, plan: Plan, paymentMethodId: string | null): Promise<Record<string, unknown>> {
    const a = await this.account(owner);
    if (a.subscriptionStatus === 'active' && a.planId === plan.id) throw new BillingError(400, 'already_subscribed', `Already subscribed to the ${plan.name} plan`, { plan_id: plan.id });
    const preview = await this.preview(owner, plan);
    const now = Date.now();
    const subId = `sub_${randomUUID()}`;
    // The subscription id is the account's version: of concurrent requests that read the same one, one wins the swap; the others pay nothing.
    let swap = this.db()
      .updateTable('billing_accounts')
      .set({ plan_id: plan.id, subscription_id: subId, subscription_status: 'active', period_start: now, period_end: now + this.cfg.periodMs, cancel_at_period_end: 0, payment_method_id: paymentMethodId ?? a.paymentMethodId ?? this.provider.name, updated_at: now })
      .where('owner', '=', owner);
    swap = a.subscriptionId === null ? swap.where('subscription_id', 'is', null) : swap.where('subscription_id', '=', a.subscriptionId);
    if (Number((await swap.executeTakeFirst()).numUpdatedRows) === 0) throw new BillingError(409, 'subscription_changed', 'The subscription was changed by another request; read the billing status and try again');
    const op = await this.pay(owner, 'subscribe', preview.amount_due as number, paymentMethodId ?? a.paymentMethodId, plan.id, `${plan.name} plan`);
    if (op.status !== 'completed') {
      // Back to what it was, unless another change came in since.
      await this.db()
        .updateTable('billing_accounts')
        .set({ plan_id: a.planId, subscription_id: a.subscriptionId, subscription_status: a.subscriptionStatus, period_start: a.periodStart, period_end: a.periodEnd, cancel_at_period_end: a.cancelAtPeriodEnd ? 1 : 0, payment_method_id: a.paymentMethodId, updated_at: Date.now() })
        .where('owner', '=', owner)
        .where('subscription_id', '=', subId)
        .execute();
      throw new BillingError(402, 'payment_failed', `The payment failed: ${op.error}`, { op_id: op.id });
    }
    await this.append(owner, { type: 'subscription', delta: plan.credits_per_month, description: `${plan.name} plan: monthly credits`, opId: op.id, dedupKey: `sub:${subId}:${now}` });
    return this.subscriptionOf(await this.read(owner))!;
  }

  async cancel(owner: string): Promise<Record<string, unknown>> {
    const a = await this.account(owner);
    if (a.subscriptionStatus !== 'active') throw new BillingError(400, 'no_active_subscription', 'There is no active subscription to cancel');
    await this.update(owner, { cancel_at_period_end: 1 });
    return this.subscriptionOf(await this.read(owner))!;
  }

  async resubscribe(owner: string): Promise<Record<string, unknown>> {
    const a = await this.account(owner);
    if (a.subscriptionStatus !== 'active' || !a.cancelAtPeriodEnd) throw new BillingError(400, 'not_cancelled', 'There is no cancelled subscription that is still running to reactivate');
    await this.update(owner, { cancel_at_period_end: 0 });
    return this.subscriptionOf(await this.read(owner))!;
  }
}

function toAccount(owner: string, r: Record<string, unknown>): Account {
  return {
    owner,
    planId: (r.plan_id as string | null) ?? null,
    subscriptionId: (r.subscription_id as string | null) ?? null,
    subscriptionStatus: (r.subscription_status as Account['subscriptionStatus']) ?? null,
    periodStart: r.period_start === null ? null : Number(r.period_start),
    periodEnd: r.period_end === null ? null : Number(r.period_end),
    cancelAtPeriodEnd: Number(r.cancel_at_period_end) === 1,
    paymentMethodId: (r.payment_method_id as string | null) ?? null,
  };
}

/** An active subscription whose period has ended: renewed (or ended) on the next read of its account. */
function periodOver(a: Account, now: number): boolean {
  return a.subscriptionStatus === 'active' && a.periodEnd !== null && a.periodEnd <= now;
}
