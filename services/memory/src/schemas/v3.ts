import { Type, type TSchema } from 'typebox';
import { Metadata, nullable, page, Timestamp } from './common.ts';

// The v3 API's models (Honcho 3.0's docs/v3/openapi.json), names and constraints as there.

const ResourceId = Type.String({ minLength: 1, maxLength: 512, pattern: '^[a-zA-Z0-9_-]+$' });
const Obj = Metadata;
const OptObj = Type.Optional(nullable(Obj));
const optBool = (description?: string) => Type.Optional(nullable(Type.Boolean(description ? { description } : {})));

export const ReasoningConfiguration = Type.Object(
  {
    enabled: optBool('Whether to enable reasoning functionality.'),
    custom_instructions: Type.Optional(nullable(Type.String({ maxLength: 10000 }))),
  },
  { title: 'ReasoningConfiguration' },
);
export const PeerCardConfiguration = Type.Object(
  { use: optBool('Whether to use the peer card during reasoning.'), create: optBool('Whether to generate the peer card from content.') },
  { title: 'PeerCardConfiguration' },
);
export const SummaryConfiguration = Type.Object(
  {
    enabled: optBool('Whether to enable summary functionality.'),
    messages_per_short_summary: Type.Optional(nullable(Type.Integer({ minimum: 10 }))),
    messages_per_long_summary: Type.Optional(nullable(Type.Integer({ minimum: 20 }))),
  },
  { title: 'SummaryConfiguration' },
);
export const DreamConfiguration = Type.Object({ enabled: optBool('Whether to enable dreams.') }, { title: 'DreamConfiguration' });

/** Workspace and session configuration: known sections are typed, other keys are kept as given. */
const configuration = (title: string) =>
  Type.Object(
    {
      reasoning: Type.Optional(nullable(ReasoningConfiguration)),
      peer_card: Type.Optional(nullable(PeerCardConfiguration)),
      summary: Type.Optional(nullable(SummaryConfiguration)),
      dream: Type.Optional(nullable(DreamConfiguration)),
    },
    { title, additionalProperties: true },
  );
export const WorkspaceConfiguration = configuration('WorkspaceConfiguration');
export const SessionConfiguration = configuration('SessionConfiguration');
export const MessageConfiguration = Type.Object({ reasoning: Type.Optional(nullable(ReasoningConfiguration)) }, { title: 'MessageConfiguration' });

export const Workspace = Type.Object(
  { id: Type.String(), metadata: Obj, configuration: Obj, created_at: Timestamp },
  { title: 'Workspace' },
);
export const Peer = Type.Object(
  { id: Type.String(), workspace_id: Type.String(), created_at: Timestamp, metadata: Obj, configuration: Obj },
  { title: 'Peer' },
);
export const Session = Type.Object(
  { id: Type.String(), is_active: Type.Boolean(), workspace_id: Type.String(), metadata: Obj, configuration: Obj, created_at: Timestamp },
  { title: 'Session' },
);
export const Message = Type.Object(
  {
    id: Type.String(),
    content: Type.String(),
    peer_id: Type.String(),
    session_id: Type.String(),
    metadata: Obj,
    created_at: Timestamp,
    workspace_id: Type.String(),
    token_count: Type.Integer(),
  },
  { title: 'Message' },
);
export const SessionPeerConfig = Type.Object(
  {
    observe_me: optBool('Whether Honcho will use reasoning to form a representation of this peer'),
    observe_others: optBool('Whether this peer should form a session-level theory-of-mind representation of other peers in the session'),
  },
  { title: 'SessionPeerConfig' },
);

export const PageWorkspace = page('Page_Workspace_', Workspace);
export const PagePeer = page('Page_Peer_', Peer);
export const PageSession = page('Page_Session_', Session);
export const PageMessage = page('Page_Message_', Message);

export const WorkspaceCreate = Type.Object(
  { id: ResourceId, metadata: Type.Optional(Obj), configuration: Type.Optional(WorkspaceConfiguration) },
  { title: 'WorkspaceCreate' },
);
export const WorkspaceUpdate = Type.Object({ metadata: OptObj, configuration: Type.Optional(nullable(WorkspaceConfiguration)) }, { title: 'WorkspaceUpdate' });
export const PeerCreate = Type.Object({ id: ResourceId, metadata: OptObj, configuration: OptObj }, { title: 'PeerCreate' });
export const PeerUpdate = Type.Object({ metadata: OptObj, configuration: OptObj }, { title: 'PeerUpdate' });
export const SessionCreate = Type.Object(
  {
    id: ResourceId,
    metadata: OptObj,
    peers: Type.Optional(nullable(Type.Record(Type.String(), SessionPeerConfig))),
    configuration: Type.Optional(nullable(SessionConfiguration)),
  },
  { title: 'SessionCreate' },
);
export const SessionUpdate = Type.Object({ metadata: OptObj, configuration: Type.Optional(nullable(SessionConfiguration)) }, { title: 'SessionUpdate' });
export const SessionPeers = Type.Record(Type.String(), SessionPeerConfig, { title: 'SessionPeers' });
export const PeerIds = Type.Array(Type.String(), { title: 'PeerIds' });

export const MessageCreate = Type.Object(
  {
    content: Type.String({ minLength: 0, maxLength: 25000 }),
    peer_id: Type.String(),
    metadata: OptObj,
    configuration: Type.Optional(nullable(MessageConfiguration)),
    created_at: Type.Optional(nullable(Type.String({ format: 'date-time' }))),
  },
  { title: 'MessageCreate' },
);
export const MessageBatchCreate = Type.Object(
  { messages: Type.Array(MessageCreate, { minItems: 1, maxItems: 100 }) },
  { title: 'MessageBatchCreate' },
);
export const MessageUpdate = Type.Object({ metadata: OptObj }, { title: 'MessageUpdate' });

/** Body of every `…/list` route: `{"filters": {…}}`, optional. */
export const ListBody = (title: string) => Type.Object({ filters: OptObj }, { title });

export const ListQuery = Type.Object({
  reverse: Type.Optional(nullable(Type.Boolean({ default: false, description: 'Whether to reverse the order of results' }))),
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'Page number' })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size' })),
});
export const PageQuery = Type.Object({
  page: Type.Optional(Type.Integer({ minimum: 1, default: 1, description: 'Page number' })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Page size' })),
});

export const WorkspaceParams = Type.Object({ workspace_id: Type.String() });
export const PeerParams = Type.Object({ workspace_id: Type.String(), peer_id: Type.String() });
export const SessionParams = Type.Object({ workspace_id: Type.String(), session_id: Type.String() });
export const SessionPeerParams = Type.Object({ workspace_id: Type.String(), session_id: Type.String(), peer_id: Type.String() });
export const MessageParams = Type.Object({ workspace_id: Type.String(), session_id: Type.String(), message_id: Type.String() });

export const Accepted = Type.Object({ message: Type.String() });
export const HonchoError = Type.Object({ detail: Type.String() }, { title: 'HonchoError' });

export type { TSchema };
