import { listRows } from './list.ts';
import { model } from './lookup.ts';
import { represent } from './represent.ts';
import type { ReadCtx } from './types.ts';

/**
 * The related objects a config template reaches through Django's related managers (`device.interfaces.all()`,
 * `virtualmachine.virtualdisks.count()`), as NetBox's render_config gives templates the model instance: each relation
 * by its NetBox name, the objects as their REST representations in the model's ordering. Only relations the template's
 * source names are loaded, at most MAX_RELATED objects each; the render worker turns them into managers
 * (events/template-managers.ts).
 */
export const MAX_RELATED = 1000;

/** NetBox's related names per object type: the model and the filter that selects the object's children. */
const RELATIONS: Record<string, Array<[name: string, model: string, filter: string]>> = {
  device: [
    ['interfaces', 'interface', 'device_id'],
    ['consoleports', 'consoleport', 'device_id'],
    ['consoleserverports', 'consoleserverport', 'device_id'],
    ['powerports', 'powerport', 'device_id'],
    ['poweroutlets', 'poweroutlet', 'device_id'],
    ['frontports', 'frontport', 'device_id'],
    ['rearports', 'rearport', 'device_id'],
    ['devicebays', 'devicebay', 'device_id'],
    ['modulebays', 'modulebay', 'device_id'],
    ['modules', 'module', 'device_id'],
    ['inventoryitems', 'inventoryitem', 'device_id'],
    ['services', 'service', 'device_id'],
  ],
  virtualmachine: [
    ['interfaces', 'vminterface', 'virtual_machine_id'],
    ['virtualdisks', 'virtualdisk', 'virtual_machine_id'],
    ['services', 'service', 'virtual_machine_id'],
  ],
};

/** `{<relation>: {model, items}}` for the relations of the object that `source` names (`.interfaces`, …). */
export async function relatedForTemplate(ctx: ReadCtx, key: string, id: number, source: string): Promise<Record<string, { model: string; items: unknown[] }>> {
  const out: Record<string, { model: string; items: unknown[] }> = {};
  for (const [name, key2, filter] of RELATIONS[key] ?? []) {
    if (!new RegExp(`\\b${name}\\b`).test(source)) continue;
    const m = model(key2);
    const { rows } = await listRows(ctx, m, { [filter]: String(id) }, { limit: MAX_RELATED, offset: 0 });
    out[name] = { model: m.title, items: await represent(ctx, m, rows) };
  }
  return out;
}
