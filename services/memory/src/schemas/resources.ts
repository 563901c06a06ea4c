import { Type } from 'typebox';
import { Content, Metadata, Name, nullable, OptionalMetadata, Timestamp, Uuid, NAME_MAX, page } from './common.ts';

// Outputs: field order as in the reference; `h_metadata` mirrors `metadata`.
export const App = Type.Object(
  { id: Uuid, name: Type.String(), h_metadata: Metadata, metadata: Metadata, created_at: Timestamp },
  { title: 'App' },
);
export const User = Type.Object(
  { id: Uuid, app_id: Uuid, created_at: Timestamp, h_metadata: Metadata, metadata: Metadata, name: Type.String() },
  { title: 'User' },
);
export const Session = Type.Object(
  {
    id: Uuid,
    is_active: Type.Boolean(),
    user_id: Uuid,
    location_id: Type.String(),
    h_metadata: Metadata,
    metadata: Metadata,
    created_at: Timestamp,
  },
  { title: 'Session' },
);
export const Message = Type.Object(
  {
    content: Type.String(),
    is_user: Type.Boolean(),
    session_id: Uuid,
    id: Uuid,
    h_metadata: Metadata,
    metadata: Metadata,
    created_at: Timestamp,
  },
  { title: 'Message' },
);
export const Metamessage = Type.Object(
  {
    metamessage_type: Type.String(),
    content: Type.String(),
    id: Uuid,
    message_id: Uuid,
    h_metadata: Metadata,
    metadata: Metadata,
    created_at: Timestamp,
  },
  { title: 'Metamessage' },
);
export const Collection = Type.Object(
  { id: Uuid, name: Type.String(), user_id: Uuid, h_metadata: Metadata, metadata: Metadata, created_at: Timestamp },
  { title: 'Collection' },
);
export const Document = Type.Object(
  { content: Type.String(), id: Uuid, h_metadata: Metadata, metadata: Metadata, created_at: Timestamp, collection_id: Uuid },
  { title: 'Document' },
);

export const PageUser = page('Page_User_', User);
export const PageSession = page('Page_Session_', Session);
export const PageMessage = page('Page_Message_', Message);
export const PageMetamessage = page('Page_Metamessage_', Metamessage);
export const PageCollection = page('Page_Collection_', Collection);
export const PageDocument = page('Page_Document_', Document);

// Inputs (pydantic models of the reference; unknown fields are ignored).
export const AppCreate = Type.Object({ name: Name, metadata: OptionalMetadata }, { title: 'AppCreate' });
export const AppUpdate = Type.Object({ name: Type.Optional(nullable(Name)), metadata: OptionalMetadata }, { title: 'AppUpdate' });
export const UserCreate = Type.Object({ name: Name, metadata: OptionalMetadata }, { title: 'UserCreate' });
export const UserUpdate = Type.Object({ name: Type.Optional(nullable(Name)), metadata: OptionalMetadata }, { title: 'UserUpdate' });
export const SessionCreate = Type.Object(
  { location_id: Type.String({ maxLength: NAME_MAX }), metadata: OptionalMetadata },
  { title: 'SessionCreate' },
);
export const SessionUpdate = Type.Object({ metadata: OptionalMetadata }, { title: 'SessionUpdate' });
export const MessageCreate = Type.Object(
  { content: Content, is_user: Type.Boolean(), metadata: OptionalMetadata },
  { title: 'MessageCreate' },
);
export const MessageUpdate = Type.Object({ metadata: OptionalMetadata }, { title: 'MessageUpdate' });
export const MetamessageCreate = Type.Object(
  { metamessage_type: Name, content: Content, message_id: Uuid, metadata: OptionalMetadata },
  { title: 'MetamessageCreate' },
);
export const MetamessageUpdate = Type.Object(
  { message_id: Uuid, metamessage_type: Type.Optional(nullable(Name)), metadata: OptionalMetadata },
  { title: 'MetamessageUpdate' },
);
export const CollectionCreate = Type.Object({ name: Name, metadata: OptionalMetadata }, { title: 'CollectionCreate' });
export const CollectionUpdate = Type.Object({ name: Name, metadata: OptionalMetadata }, { title: 'CollectionUpdate' });
export const DocumentCreate = Type.Object({ content: Content, metadata: OptionalMetadata }, { title: 'DocumentCreate' });
export const DocumentUpdate = Type.Object(
  { content: Type.Optional(nullable(Content)), metadata: OptionalMetadata },
  { title: 'DocumentUpdate' },
);
