import { promptsMigration } from './migrations/001_prompts.ts';
import { assetsMigration } from './migrations/002_assets.ts';
import { identityMigration } from './migrations/003_identity.ts';
import { cloudContentMigration } from './migrations/004_cloud_content.ts';
import { cloudOpsMigration } from './migrations/005_cloud_ops.ts';
import { rateLimitsMigration } from './migrations/006_rate_limits.ts';
import { wsRelayMigration } from './migrations/007_ws_relay.ts';
import { sharedQueueMigration } from './migrations/008_shared_queue.ts';
import { billingBalanceMigration } from './migrations/009_billing_balance.ts';
import { oauthRequestBindingMigration } from './migrations/010_oauth_request_binding.ts';

export const workflowMigrations = [promptsMigration, assetsMigration, identityMigration, cloudContentMigration, cloudOpsMigration, rateLimitsMigration, wsRelayMigration, sharedQueueMigration, billingBalanceMigration, oauthRequestBindingMigration];
