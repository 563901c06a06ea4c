import { promptsMigration } from './migrations/001_prompts.ts';
import { identityMigration } from './migrations/003_identity.ts';

export const workflowMigrations = [promptsMigration, identityMigration];
