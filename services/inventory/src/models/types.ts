import type { Kysely, RawBuilder } from 'kysely';
import type { SqlDialect } from '@svc/storage';
import type { ModelSettings, WriteContext } from '../changes/write-context.ts';

/** A NetBox choice: stored `value`, shown `label` (REST gives both). */
export interface Choice {
  value: string;
  label: string;
}

export type FieldKind = 'char' | 'slug' | 'text' | 'integer' | 'decimal' | 'boolean' | 'choice' | 'fk' | 'color' | 'mac' | 'ipaddress' | 'dnsname' | 'objecttype' | 'json' | 'prefix' | 'm2m';

export interface FieldDef {
  /** API and snapshot name (`site`, `status`). */
  name: string;
  /** Database column (`site_id`). */
  column: string;
  kind: FieldKind;
  /** Must be given on create and on PUT. */
  required?: boolean;
  nullable?: boolean;
  /** '' is allowed (char-like kinds). */
  blank?: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  choices?: Choice[];
  /** Value used on create when the field is absent. */
  default?: unknown;
  /** Referenced model key (kind 'fk'). */
  fk?: string;
  /** Unique on its own (DRF: "<model> with this <field> already exists."). */
  unique?: boolean;
  /** Exposed as a filter with its name (plus lookups for strings). */
  filter?: boolean;
  /** Decimal places of a decimal column (snapshot text); 1 when absent. */
  places?: number;
  /** OPTIONS label when not derived from the name. */
  label?: string;
  /** Validates and converts a non-null input value instead of the kind's own rule (throws FieldProblem via `fail`). */
  parse?: (v: unknown) => unknown;
  /** How a filter value is brought to the stored form before it is compared (a WWN in any notation). */
  filterNormalise?: (s: string) => string;
  /** kind 'm2m': the link table, its column for this object and for the referenced one. */
  through?: { table: string; column: string; target: string };
  /** kind 'm2m': a string item names the referenced object by this attribute (NetBox's SlugRelatedField). */
  itemAttribute?: string;
}

export type Row = Record<string, any>;

/** Briefs of referenced objects, keyed by API field name. */
export type Refs = Record<string, Record<string, any> | null>;

export interface ExtraFilter {
  /** Query parameter name. */
  name: string;
  /** How the value is matched: ids of a column, slugs/names through a referenced model, or a custom SQL builder. */
  kind: 'fk_id' | 'fk_slug' | 'int' | 'string' | 'bool' | 'custom';
  column?: string;
  /** For fk filters: the referenced model and the attribute matched. */
  model?: string;
  attribute?: string;
  /**
   * NetBox's TreeNodeMultipleChoiceFilter: the named nodes of `model` (a tree by `parent_id`) stand for
   * their whole subtree, so `region_id=<europe>` also matches what sits in its child regions.
   */
  subtree?: boolean;
  /**
   * The matched column is reached through other tables, outermost first: `column` of this model holds
   * the id of `through[0].table`, whose `through[0].column` holds … the ids being filtered on.
   */
  through?: Array<{ table: string; column: string }>;
  /** kind 'custom': the condition for the given values (errors as django-filter words them), defined with the model. */
  where?: (ctx: ReadCtx, vals: string[], errors: Record<string, string[]>) => Promise<RawBuilder<unknown> | undefined>;
  /**
   * kind 'int': a number computed in SQL for each row of `table` (a count of related rows, a prefix's depth) instead of
   * `column`; kind 'bool': a condition on the row, matched for `true` and negated for `false`.
   */
  expr?: (table: string) => RawBuilder<unknown>;
}

export interface ModelDef {
  key: string;
  app: string;
  /** URL segment: `/api/<app>/<path>/`. */
  path: string;
  table: string;
  /** `app.model`, e.g. dcim.device. */
  objectType: string;
  /** For messages: "device with this name already exists." */
  verboseName: string;
  /** Title for 404s and the OpenAPI tag. */
  title: string;
  fields: FieldDef[];
  uniqueTogether?: string[][];
  /** Default ordering: API field names, '-' for descending. */
  ordering: string[];
  /** Columns searched by `q` (icontains). */
  search: string[];
  /** Extra fields (beyond id/url/display) of the brief form. */
  brief: string[];
  /** Objects of this model carry tags and custom fields. */
  taggable: boolean;
  /** `name` sorts naturally ("eth2" before "eth10") through a `_name` column, as NetBox's NaturalOrderingField. */
  naturalName?: boolean;
  /** FK fields whose briefs display() needs. */
  displayNeeds?: string[];
  /**
   * FK fields whose raw rows (not briefs: no further references are loaded, so a model may name one that points
   * back at it) display() needs, each with the test of which rows need it; read as `refs['<field>:row']`.
   */
  displayRows?: Record<string, (row: Row) => boolean>;
  display(row: Row, refs: Refs): string;
  extraFilters?: ExtraFilter[];
  /** Children that prevent deleting this object (NetBox PROTECT). */
  protectedBy?: Array<{ model: string; column: string }>;
  /** Children deleted along with this object, each change-logged (NetBox CASCADE). */
  cascade?: Array<{ model: string; column: string; typeColumn?: string }>;
  /** Model-specific checks after field validation (e.g. the IP address assignment pair). */
  clean?: (values: Row, existing: Row | null, errors: Record<string, string[]>) => void;
  /** Read-only values placed right after a field in the full representation (`primary_ip` after `primary_ip6`). */
  computed?: Record<string, Array<[name: string, value: (row: Row, refs: Refs) => unknown]>>;
  /** Model-specific additions to the representation (ip family, assigned_object). */
  represent?: (row: Row, out: Record<string, unknown>, refs: Refs) => Record<string, unknown>;
  /** Checks that need the database (relations between fields, uniqueness rules of NetBox's clean()). */
  check?: (ctx: ReadCtx, values: Row, existing: Row | null, errors: Record<string, string[]>, m2m?: Record<string, number[]>) => Promise<void>;
  /** Columns derived from the values on every write (sort keys, ranges). */
  derived?: (merged: Row) => Row;
  /**
   * Read-only counts NetBox returns (`device_count`): children of a model by a column, or a constant 0 when not
   * modelled. `typeColumn` restricts a generic relation to this model's object type; `sum` totals that column of the
   * children instead of counting them (null when there are none, as Django's Sum).
   */
  counts?: Record<string, { model: string; column: string; typeColumn?: string; sum?: string } | null>;
  /** Counts of `counts` entries given as null that are computed by a query of their own (per batch of object ids). */
  countsCustom?: Record<string, (ctx: ReadCtx, ids: number[]) => Promise<Map<number, number>>>;
  /**
   * Keys NetBox's serializer always returns for features this service does not model, with the
   * value they always have here; a write of any other value is refused with a 400.
   */
  unmodelled?: Record<string, unknown>;
  /** Nullable references to this object cleared when it is deleted (NetBox SET_NULL). */
  setNull?: Array<{ model: string; column: string }>;
  /** FK-like references not declared as fields (ip assigned interface): api name → [model, id column]. */
  extraRefs?: Record<string, { model: string; column: string; typeColumn?: string; type?: string }>;
  /** Read-only values of the brief form that are not fields (`_occupied`); extra refs in `brief` come from their briefs. */
  briefValues?: Record<string, (row: Row, refs: Refs) => unknown>;
  /** Read-only values that need the database (cable peers, traced endpoints), added to full representations of many rows at once. */
  enrich?: (ctx: ReadCtx, rows: Row[], out: Array<Record<string, unknown>>) => Promise<void>;
  /** Runs in the write transaction after the object's row was inserted or updated (keeps index tables in step). */
  afterSave?: (w: WriteContext, id: number, row: Row, existing: Row | null) => Promise<void>;
  /** The OpenAPI tag of its operations when not the app (`dcim-cabling`: /docs shows one tag at a time, so big apps are split). */
  docsTag?: string;
  /** Runs in the write transaction before the object's row is deleted. */
  beforeDelete?: (w: WriteContext, row: Row) => Promise<void>;
  /**
   * Replaces secrets in the change's snapshots (change log and event payloads) with tokens, as NetBox's
   * to_objectchange() does for data sources' credentials; returns new objects, never changes the ones given.
   */
  censorSnapshots?: (prechange: Record<string, unknown> | null, postchange: Record<string, unknown> | null) => { prechange: Record<string, unknown> | null; postchange: Record<string, unknown> | null };
  /** A NetBox generic foreign key to any object of the allowed types: checked on write, its brief in the representation. */
  genericRef?: GenericRef;
  /** NetBox's scope (`scope_type` + `scope_id`, nullable): its brief as `scope` in the representation (see models/scopes.ts). */
  scopeRef?: GenericRef;
  /** Only read through the API (NetBox's read-only viewsets, e.g. data files): no create, update or delete routes. */
  readOnly?: boolean;
}

/** A generic foreign key's columns, API name and NetBox's rules (see models/generic-object.ts). */
export interface GenericRef {
  typeColumn: string;
  idColumn: string;
  /** API name of the nested object (`assigned_object`, `object`), placed right after the id field. */
  objectName: string;
  /** Whether objects of a type may be referenced (NetBox's model feature: journaling, contacts). */
  supported(m: ModelDef): boolean;
  /** Field and message for a known type without the feature. */
  unsupported(m: ModelDef): [field: string, message: string];
  /** Field and message when the object does not exist (`label` as Django prints the content type). */
  missing(label: string, id: number): [field: string, message: string];
}

/** What reading and representing objects needs: a connection (maybe the request's transaction), the dialect, the URL base. */
export interface ReadCtx {
  db: Kysely<any>;
  dialect: SqlDialect;
  /** `http://host:port` for API responses; '' for event data (NetBox serialises those without a request). */
  base: string;
  /** Validation settings (writes only). */
  settings?: ModelSettings;
  /** The writing user (writes only): NetBox's CurrentUserDefault, e.g. a journal entry's created_by. */
  userId?: number;
  /** The request leaves `config_context` out (`?exclude=config_context`): config contexts are not merged. */
  skipConfigContext?: boolean;
}
