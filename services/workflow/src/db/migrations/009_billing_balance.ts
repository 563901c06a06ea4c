import { sql, type Kysely } from 'kysely';
import type { Migration } from '@svc/storage';

/**
 * Each billing account carries its balance, kept equal to the sum of its
 * ledger by a trigger in the transaction of every ledger insert (and delete),
 * so the credit check of each new prompt reads one row instead of summing a
 * workspace's whole history. The ledger stays append-only and authoritative
 * (the balance endpoint still sums it); an event for a workspace without an
 * account row creates the row.
 */
export const billingBalanceMigration: Migration = {
  name: '009_billing_balance',
  async up(db: Kysely<any>, dialect) {
    await sql`alter table billing_accounts add column balance bigint not null default 0`.execute(db);
    await sql`insert into billing_accounts (owner, cancel_at_period_end, created_at, updated_at)
      select owner, 0, min(created_at), min(created_at) from billing_events group by owner
      on conflict (owner) do nothing`.execute(db);
    await sql`update billing_accounts set balance = coalesce((select sum(delta) from billing_events e where e.owner = billing_accounts.owner), 0)`.execute(db);
    if (dialect.kind === 'postgres') {
      await sql`create function billing_balance_follow() returns trigger language plpgsql as $$
        begin
          if tg_op = 'INSERT' then
            insert into billing_accounts (owner, balance, cancel_at_period_end, created_at, updated_at)
            values (new.owner, new.delta, 0, new.created_at, new.created_at)
            on conflict (owner) do update set balance = billing_accounts.balance + excluded.balance;
          else
            update billing_accounts set balance = balance - old.delta where owner = old.owner;
          end if;
          return null;
        end $$`.execute(db);
      await sql`create trigger billing_events_balance after insert or delete on billing_events for each row execute function billing_balance_follow()`.execute(db);
    } else {
      await sql`create trigger billing_events_balance_insert after insert on billing_events begin
          insert into billing_accounts (owner, balance, cancel_at_period_end, created_at, updated_at)
          values (new.owner, new.delta, 0, new.created_at, new.created_at)
          on conflict (owner) do update set balance = balance + excluded.balance;
        end`.execute(db);
      await sql`create trigger billing_events_balance_delete after delete on billing_events begin
          update billing_accounts set balance = balance - old.delta where owner = old.owner;
        end`.execute(db);
    }
  },
};
