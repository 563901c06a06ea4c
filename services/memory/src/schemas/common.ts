import { Type, type TProperties, type TSchema } from 'typebox';

/** Column limits of the reference (String(512) names, String(65535) content): longer input is a 422, not a DB error. */
export const NAME_MAX = 512;
export const CONTENT_MAX = 65535;
/** Filters are short JSON documents; bounding them keeps the containment check cheap. */
export const FILTER_MAX = 8192;

export const Uuid = Type.String({ format: 'uuid' });
export const Name = Type.String({ maxLength: NAME_MAX });
export const Content = Type.String({ maxLength: CONTENT_MAX });
export const Timestamp = Type.String({ format: 'date-time' });

/** A free-form JSON object (pydantic `dict`). */
export const Metadata = Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true });
export const OptionalMetadata = Type.Optional(Type.Union([Metadata, Type.Null()]));

export const nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);

/** The list parameters of every paged list; `reverse` is a plain bool only on the user list, as in the reference. */
export function listQuery<E extends TProperties = {}>(extra: E = {} as E, nullableReverse = true) {
  return Type.Object({
    ...extra,
    reverse: Type.Optional(nullableReverse ? Type.Union([Type.Boolean(), Type.Null()], { default: false }) : Type.Boolean({ default: false })),
    filter: Type.Optional(Type.Union([Type.String({ maxLength: FILTER_MAX }), Type.Null()])),
    page: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
    size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  });
}

export interface ListQuery {
  reverse?: boolean | null;
  filter?: string | null;
  page?: number;
  size?: number;
}

export function page<T extends TSchema>(name: string, item: T) {
  return Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({ minimum: 0 }),
      page: Type.Integer({ minimum: 1 }),
      size: Type.Integer({ minimum: 1 }),
      pages: Type.Integer({ minimum: 0 }),
    },
    { title: name },
  );
}

export const DetailMessage = Type.Object({ message: Type.String() });
export const HttpDetail = Type.Object({ detail: Type.String() }, { title: 'HTTPError' });

export const ValidationErrorSchema = Type.Object(
  {
    detail: Type.Array(
      Type.Object(
        {
          loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
          msg: Type.String(),
          type: Type.String(),
        },
        { title: 'ValidationError', additionalProperties: true },
      ),
    ),
  },
  { title: 'HTTPValidationError' },
);
