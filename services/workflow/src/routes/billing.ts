import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Billing, BillingError, EVENT_TYPES, PLANS, type EventType } from '../domain/cloud/billing.ts';
import { cloudError } from '../identity/errors.ts';
import { arrayOf, badRequest, cloudRoute, errors, objectBody, principal, ref, type Handler } from './cloud-common.ts';
import { notFound, param, qInt, qString, query, UUID_RE, wellFormed } from './cloud-params.ts';
import { publicOrigin } from '../identity/origins.ts';

function billingErrors(h: Handler): Handler {
  return async (req, reply) => {
    try {
      return await h(req, reply);
    } catch (err) {
      if (err instanceof BillingError) throw cloudError(err.status, err.code, err.message, err.details);
      throw err;
    }
  };
}

/** The service's public origin (configured, never the Host header's text), for the portal's return URL. */
function baseUrl(req: FastifyRequest): string {
  const identity = (req.server as unknown as { identity?: { baseUrl(r: FastifyRequest): string } }).identity;
  return identity ? identity.baseUrl(req) : publicOrigin(req, []);
}

const MAX_TOPUP = 10_000_000;

/** /api/billing: plans, balance and ledger events, subscriptions, top-ups and billing operations of the caller's workspace. */
export function billingRoutes(app: FastifyInstance, billing: Billing): void {
  const owner = (req: FastifyRequest) => principal(req).workspaceId;
  const planBody = (req: FastifyRequest) => {
    const b = objectBody(req);
    if (typeof b.plan_id !== 'string') badRequest('plan_id is required', { field: 'plan_id' });
    return { plan: billing.plan(b.plan_id), body: b };
  };

  cloudRoute(app, 'GET', '/api/billing/plans', { operationId: 'listBillingPlans', tags: ['billing'], description: 'Returns the list of available subscription plans and their pricing.', response: { 200: arrayOf('BillingPlan') } }, () => PLANS, 'public');

  cloudRoute(app, 'GET', '/api/billing/balance', { operationId: 'getBillingBalance', tags: ['billing'], description: "Returns the authenticated user's current credit balance and usage summary. The balance is the sum of the workspace's ledger events.", response: { 200: ref('BillingBalance') } }, async (req) => billing.balance(owner(req)));

  cloudRoute(
    app,
    'GET',
    '/api/billing/events',
    {
      operationId: 'listBillingEvents',
      tags: ['billing'],
      description: 'Returns a paginated list of billing events (charges, credits, refunds) for the authenticated user, newest first.',
      querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, offset: { type: 'integer', minimum: 0, default: 0 }, type: { type: 'string', enum: EVENT_TYPES } } },
      response: { 200: ref('BillingEventList'), ...errors(400) },
    },
    async (req) => {
      const q = query(req);
      const limit = qInt(q, 'limit', 20, 1, 100);
      const offset = qInt(q, 'offset', 0, 0, 1e12);
      const type = qString(q, 'type', 32);
      if (type && !EVENT_TYPES.includes(type as EventType)) badRequest(`type must be one of ${EVENT_TYPES.join(', ')}`, { field: 'type' });
      return billing.events(owner(req), { type: (type || undefined) as EventType | undefined, limit, offset });
    },
  );

  cloudRoute(
    app,
    'GET',
    '/api/billing/ops/:id',
    { operationId: 'getBillingOp', tags: ['billing'], description: 'Returns details of a specific billing operation (a subscription payment, renewal or top-up).', params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } }, response: { 200: ref('BillingOp'), ...errors(404) } },
    async (req) => {
      const id = param(req, 'id');
      const op = UUID_RE.test(id) ? await billing.op(owner(req), id.toLowerCase()) : null;
      if (!op) notFound('Billing operation');
      return op;
    },
  );

  cloudRoute(
    app,
    'POST',
    '/api/billing/payment-portal',
    { operationId: 'createPaymentPortalSession', tags: ['billing'], description: "Creates a payment provider portal session for managing payment methods and invoices. Returns a URL to redirect the user to. The built-in provider (no payment processor configured) has no portal and returns the billing status URL.", response: { 200: { description: 'OK', type: 'object', properties: { url: { type: 'string' } } } } },
    async (req) => ({ url: billing.provider.portalUrl(owner(req), baseUrl(req)) }),
  );

  cloudRoute(
    app,
    'POST',
    '/api/billing/preview-subscribe',
    { operationId: 'previewSubscription', tags: ['billing'], description: 'Returns a preview of what a subscription change would cost, including prorations of the current plan.', body: { type: 'object', required: ['plan_id'], properties: { plan_id: { type: 'string' } } }, response: { 200: ref('SubscriptionPreview'), ...errors(400) } },
    billingErrors(async (req) => billing.preview(owner(req), planBody(req).plan)),
  );

  cloudRoute(app, 'GET', '/api/billing/status', { operationId: 'getBillingStatus', tags: ['billing'], description: "Returns the authenticated user's current billing and subscription status.", response: { 200: ref('BillingStatus') } }, async (req) => billing.status(owner(req)));

  cloudRoute(
    app,
    'POST',
    '/api/billing/subscribe',
    {
      operationId: 'createSubscription',
      tags: ['billing'],
      description: "Creates a new subscription to the specified billing plan (or changes plan); the plan's monthly credits are added to the ledger. Payment goes through the configured payment provider; the built-in provider records the payment without charging.",
      body: { type: 'object', required: ['plan_id'], properties: { plan_id: { type: 'string' }, payment_method_id: { type: 'string' } } },
      response: { 200: ref('BillingSubscription'), ...errors(400, 402, 409) },
    },
    billingErrors(async (req) => {
      const { plan, body } = planBody(req);
      const pm = body.payment_method_id;
      if (pm !== undefined && pm !== null && (typeof pm !== 'string' || pm.length > 200 || !wellFormed(pm))) badRequest('payment_method_id must be a string', { field: 'payment_method_id' });
      return billing.subscribe(owner(req), plan, (pm as string | undefined) ?? null);
    }),
  );

  cloudRoute(
    app,
    'POST',
    '/api/billing/subscription/cancel',
    { operationId: 'cancelSubscription', tags: ['billing'], description: "Cancels the authenticated user's active subscription. The subscription remains active until the end of the current billing period.", response: { 200: ref('BillingSubscription'), ...errors(400) } },
    billingErrors(async (req) => billing.cancel(owner(req))),
  );

  cloudRoute(
    app,
    'POST',
    '/api/billing/subscription/resubscribe',
    { operationId: 'resubscribe', tags: ['billing'], description: 'Reactivates a subscription that was previously cancelled but has not yet expired.', response: { 200: ref('BillingSubscription'), ...errors(400) } },
    billingErrors(async (req) => billing.resubscribe(owner(req))),
  );

  cloudRoute(
    app,
    'POST',
    '/api/billing/topup',
    {
      operationId: 'topUpCredits',
      tags: ['billing'],
      description: "Purchases a one-time credit top-up using the workspace's payment method, through the configured payment provider. The built-in provider (no payment processor configured) records the top-up without charging anyone.",
      body: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer', minimum: 1, maximum: MAX_TOPUP, description: 'Number of credits to purchase' } } },
      response: { 200: ref('BillingBalance'), ...errors(400, 402) },
    },
    billingErrors(async (req) => {
      const b = objectBody(req);
      if (typeof b.amount !== 'number' || !Number.isInteger(b.amount) || b.amount < 1 || b.amount > MAX_TOPUP) badRequest(`amount must be an integer number of credits from 1 to ${MAX_TOPUP}`, { field: 'amount' });
      return billing.topUp(owner(req), b.amount as number);
    }),
  );
}
