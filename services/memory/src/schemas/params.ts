import { Type } from 'typebox';
import { NAME_MAX, Uuid } from './common.ts';

const PathName = Type.String({ maxLength: NAME_MAX });

export const AppParams = Type.Object({ app_id: Uuid });
export const AppNameParams = Type.Object({ name: PathName });
export const UserParams = Type.Object({ app_id: Uuid, user_id: Uuid });
export const UserNameParams = Type.Object({ app_id: Uuid, name: PathName });
export const SessionParams = Type.Object({ app_id: Uuid, user_id: Uuid, session_id: Uuid });
export const MessageParams = Type.Object({ app_id: Uuid, user_id: Uuid, session_id: Uuid, message_id: Uuid });
export const MetamessageParams = Type.Object({ app_id: Uuid, user_id: Uuid, session_id: Uuid, metamessage_id: Uuid });
export const CollectionParams = Type.Object({ app_id: Uuid, user_id: Uuid, collection_id: Uuid });
export const CollectionNameParams = Type.Object({ app_id: Uuid, user_id: Uuid, name: PathName });
export const DocumentParams = Type.Object({ app_id: Uuid, user_id: Uuid, collection_id: Uuid, document_id: Uuid });

/** Path prefixes of the seed: S (sessions) and C (collections). */
export const U = '/apps/:app_id/users/:user_id';
export const S = `${U}/sessions`;
/** The seed's slash-less form `{user_id}sessions` (a v0.0.5 routing bug that clients of the spec use). */
export const S_NOSLASH = '/apps/:app_id/users/:user_id(^[^/]+?)sessions';
export const C = `${U}/collections`;
