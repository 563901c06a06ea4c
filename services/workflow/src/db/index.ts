import { promptsMigration } from './migrations/001_prompts.ts';

export const workflowMigrations = [promptsMigration];
