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
    scopes: Type.Optional(nullable(Type.Array(Type.String(), { maxItems: 100, description: 'Scopes (unprefixed names) this session joins; each is created when missing, and a session with messages is backfilled into it in the background.' }))),
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
/** `POST …/peers/list`: `kind` "scope" lists scope peers only, "all" every peer; omitted, scope peers are left out. */
export const PeerListBody = Type.Object(
  { filters: OptObj, kind: Type.Optional(nullable(Type.String({ enum: ['scope', 'all'], description: 'Which kinds of peers to list: omitted, regular peers only; "scope": scope peers only; "all": every peer.' }))) },
  { title: 'PeerGet' },
);

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

// Search, context, summaries, conclusions, dialectic, queue.

export const MessageSearchOptions = Type.Object(
  {
    query: Type.String({ maxLength: 10000, description: 'Search query' }),
    filters: OptObj,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Number of results to return' })),
  },
  { title: 'MessageSearchOptions' },
);
export const WorkspaceMessageSearchOptions = Type.Object(
  {
    ...MessageSearchOptions.properties,
    scope: Type.Optional(nullable(Type.String({ description: "Optional (unprefixed) scope name restricting search to the scope's member sessions (none: no results). Mutually exclusive with a 'session_id' key in `filters`." }))),
  },
  { title: 'WorkspaceMessageSearchOptions' },
);
export const MessageList = Type.Array(Message, { title: 'MessageList' });

export const Summary = Type.Object(
  { content: Type.String(), message_id: Type.String(), summary_type: Type.String(), created_at: Type.String(), token_count: Type.Integer() },
  { title: 'Summary' },
);
export const SessionSummaries = Type.Object(
  { id: Type.String(), short_summary: nullable(Summary), long_summary: nullable(Summary) },
  { title: 'SessionSummaries' },
);
const PeerCardList = nullable(Type.Array(Type.String()));
export const SessionContext = Type.Object(
  { id: Type.String(), messages: Type.Array(Message), summary: nullable(Summary), peer_representation: nullable(Type.String()), peer_card: PeerCardList },
  { title: 'SessionContext' },
);
const searchParams = {
  search_query: Type.Optional(nullable(Type.String({ maxLength: 10000 }))),
  search_top_k: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
  search_max_distance: Type.Optional(nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  include_most_frequent: Type.Optional(nullable(Type.Boolean())),
  max_conclusions: Type.Optional(nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
};
export const SessionContextQuery = Type.Object({
  tokens: Type.Optional(nullable(Type.Integer({ maximum: 100000, description: 'Token budget of the whole context' }))),
  summary: Type.Optional(Type.Boolean({ default: true, description: 'Whether to include a summary if one is available' })),
  peer_target: Type.Optional(nullable(Type.String())),
  peer_perspective: Type.Optional(nullable(Type.String())),
  scope: Type.Optional(nullable(Type.String({ description: "An (unprefixed) scope name to read `peer_target`'s representation and card from, instead of the global (or `peer_perspective`) view. Needs `peer_target`; exclusive with `peer_perspective`; needs a workspace- or admin-level key." }))),
  limit_to_session: Type.Optional(Type.Boolean({ default: false })),
  ...searchParams,
});
export const PeerContextQuery = Type.Object({ target: Type.Optional(nullable(Type.String())), ...searchParams });
export const PeerContext = Type.Object(
  { peer_id: Type.String(), target_id: Type.String(), representation: nullable(Type.String()), peer_card: PeerCardList },
  { title: 'PeerContext' },
);
export const PeerRepresentationGet = Type.Object(
  { session_id: Type.Optional(nullable(Type.String())), target: Type.Optional(nullable(Type.String())), filters: OptObj, ...searchParams, scope: Type.Optional(Type.Unknown({ description: 'Optional (unprefixed) scope name, or a list of 1–100, to confine recall. One scope answers as the scope (its own conclusions, its member sessions); a list confines recall to the union of their member sessions. Mutually exclusive with `filters` and `session_id`; needs a workspace- or admin-level key.' })) },
  { title: 'PeerRepresentationGet' },
);
export const RepresentationResponse = Type.Object({ representation: Type.String() }, { title: 'RepresentationResponse' });
export const TargetQuery = Type.Object({ target: Type.Optional(nullable(Type.String())) });
export const PeerCardResponse = Type.Object({ peer_card: PeerCardList }, { title: 'PeerCardResponse' });
export const PeerCardSet = Type.Object({ peer_card: Type.Array(Type.String({ maxLength: 65535 }), { maxItems: 1000 }) }, { title: 'PeerCardSet' });

export const Conclusion = Type.Object(
  {
    id: Type.String(),
    content: Type.String(),
    observer_id: Type.String(),
    observed_id: Type.String(),
    session_id: nullable(Type.String()),
    level: Type.String({ enum: ['explicit', 'deductive', 'inductive', 'contradiction'] }),
    created_at: Timestamp,
  },
  { title: 'Conclusion' },
);
export const PageConclusion = page('Page_Conclusion_', Conclusion);
export const ConclusionCreate = Type.Object(
  { content: Type.String({ minLength: 1, maxLength: 65535 }), observer_id: Type.String(), observed_id: Type.String(), session_id: Type.Optional(nullable(Type.String())) },
  { title: 'ConclusionCreate' },
);
export const ConclusionBatchCreate = Type.Object({ conclusions: Type.Array(ConclusionCreate, { minItems: 1, maxItems: 100 }) }, { title: 'ConclusionBatchCreate' });
export const ConclusionQuery = Type.Object(
  {
    query: Type.String({ maxLength: 10000, description: 'Semantic search query' }),
    top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
    distance: Type.Optional(nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    filters: OptObj,
  },
  { title: 'ConclusionQuery' },
);
export const ConclusionList = Type.Array(Conclusion, { title: 'ConclusionList' });
export const ConclusionParams = Type.Object({ workspace_id: Type.String(), conclusion_id: Type.String() });

export const DialecticOptions = Type.Object(
  {
    session_id: Type.Optional(nullable(Type.String())),
    filters: OptObj,
    target: Type.Optional(nullable(Type.String())),
    query: Type.String({ minLength: 1, maxLength: 10000, description: 'Dialectic API Prompt' }),
    stream: Type.Optional(Type.Boolean({ default: false })),
    reasoning_level: Type.Optional(Type.String({ enum: ['minimal', 'low', 'medium', 'high', 'max'], default: 'low' })),
    response_format: OptObj,
    include_evidence: Type.Optional(nullable(Type.Boolean({ description: 'Also return what the dialectic read (conclusions and messages).' }))),
    scope: Type.Optional(Type.Unknown({ description: 'Optional (unprefixed) scope name, or a list of 1–100, to confine recall. One scope answers as the scope (its own conclusions, its member sessions); a list confines recall to the union of their member sessions. Mutually exclusive with `filters` and `session_id`; needs a workspace- or admin-level key.' })),
  },
  { title: 'DialecticOptions' },
);
export const WorkspaceChatOptions = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: 10000, description: 'Question about the workspace as a whole' }),
    session_id: Type.Optional(nullable(Type.String())),
    stream: Type.Optional(Type.Boolean({ default: false })),
    reasoning_level: Type.Optional(Type.String({ enum: ['minimal', 'low', 'medium', 'high', 'max'], default: 'low' })),
    response_format: OptObj,
    include_evidence: Type.Optional(nullable(Type.Boolean())),
    scope: Type.Optional(Type.Unknown({ description: 'Optional (unprefixed) scope name, or a list of 1–100, to confine recall. One scope answers as the scope (its own conclusions, its member sessions); a list confines recall to the union of their member sessions. Mutually exclusive with `filters` and `session_id`; needs a workspace- or admin-level key.' })),
  },
  { title: 'WorkspaceChatOptions' },
);
const Evidence = Type.Object(
  {
    conclusions: Type.Array(
      Type.Object({ id: Type.String(), level: Type.String(), content: Type.String(), created_at: Type.String(), session_id: nullable(Type.String()), source_ids: Type.Array(Type.String()) }),
    ),
    messages: Type.Array(Type.Object({ id: Type.String(), session_id: Type.String(), peer_id: Type.String(), created_at: Type.String() })),
    tool_calls: Type.Array(Type.Object({ tool_name: Type.String(), tool_input: Type.Record(Type.String(), Type.Unknown()) })),
    reasoning_trace_id: nullable(Type.String()),
  },
  { title: 'Evidence' },
);
export const DialecticResponse = Type.Object({ content: nullable(Type.String()), evidence: Type.Optional(nullable(Evidence)) }, { title: 'DialecticResponse' });

const WorkCounts = {
  total_work_units: Type.Integer(),
  completed_work_units: Type.Integer(),
  in_progress_work_units: Type.Integer(),
  pending_work_units: Type.Integer(),
};
export const SessionQueueStatus = Type.Object({ session_id: Type.Optional(nullable(Type.String())), ...WorkCounts }, { title: 'SessionQueueStatus' });
export const QueueStatus = Type.Object({ ...WorkCounts, sessions: Type.Optional(nullable(Type.Record(Type.String(), SessionQueueStatus))) }, { title: 'QueueStatus' });
export const QueueStatusQuery = Type.Object({
  observer_id: Type.Optional(nullable(Type.String())),
  sender_id: Type.Optional(nullable(Type.String())),
  session_id: Type.Optional(nullable(Type.String())),
});
export const ScheduleDreamRequest = Type.Object(
  {
    observer: Type.String(),
    observed: Type.Optional(nullable(Type.String())),
    dream_type: Type.String({ enum: ['omni', 'card_refresh'] }),
    session_id: Type.Optional(nullable(Type.String())),
    rebuild: Type.Optional(Type.Boolean({ default: false })),
  },
  { title: 'ScheduleDreamRequest' },
);

// Scopes (SDK 2.5's honcho.scope()).

export const ScopeParams = Type.Object({ workspace_id: Type.String(), scope_id: Type.String() });
export const ScopeSessionParams = Type.Object({ workspace_id: Type.String(), scope_id: Type.String(), session_id: Type.String() });
export const ScopeCreate = Type.Object({ id: Type.String({ description: 'Unprefixed scope name' }), metadata: OptObj }, { title: 'ScopeCreate' });
export const Scope = Type.Object({ id: Type.String(), metadata: Obj, created_at: Type.String() }, { title: 'Scope' });
export const PageScope = page('Page_Scope_', Scope);
export const ScopeSessionsAdd = Type.Object(
  { session_ids: Type.Array(Type.String(), { minItems: 1, maxItems: 100, description: 'IDs of existing sessions to add to the scope' }) },
  { title: 'ScopeSessionsAdd' },
);
export const ScopeStatus = Type.Object(
  {
    backfill_status: Type.Record(
      Type.String(),
      Type.Object({ state: Type.String({ enum: ['pending', 'completed', 'failed'] }), updated_at: Type.String(), docs_copied: Type.Optional(Type.Integer()) }),
    ),
  },
  { title: 'ScopeStatus' },
);
