import { customFieldChoiceSet } from './choice-sets.ts';
import { configContext, configTemplate } from './config-contexts.ts';
import { contactAssignment } from './contact-assignments.ts';

export { withContactFilters } from './contact-assignments.ts';
import { journalEntry } from './journal.ts';
import type { ModelDef } from './types.ts';

/** Issue 24's extras: journal entries, config contexts and templates, custom field choice sets, contact assignments. */
export const JOURNAL_CONFIG_MODELS: ModelDef[] = [customFieldChoiceSet, configTemplate, configContext, journalEntry, contactAssignment];
