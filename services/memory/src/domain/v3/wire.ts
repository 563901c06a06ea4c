import { meta, ts } from './util.ts';

// The v3 wire shapes, field order as the reference's pydantic models print them.

export function workspaceToJson(r: any) {
  return { id: r.name, metadata: meta(r.metadata), configuration: meta(r.configuration), created_at: ts(r.created_at) };
}

export function peerToJson(r: any) {
  return { id: r.name, workspace_id: r.workspace, created_at: ts(r.created_at), metadata: meta(r.metadata), configuration: meta(r.configuration) };
}

export function sessionToJson(r: any) {
  return {
    id: r.name,
    is_active: r.is_active === true || r.is_active === 1 || r.is_active === '1' || r.is_active === 't',
    workspace_id: r.workspace,
    metadata: meta(r.metadata),
    configuration: meta(r.configuration),
    created_at: ts(r.created_at),
  };
}

export function messageToJson(r: any) {
  return {
    id: r.id,
    content: r.content,
    peer_id: r.peer,
    session_id: r.session,
    metadata: meta(r.metadata),
    created_at: ts(r.created_at),
    workspace_id: r.workspace,
    token_count: Number(r.token_count),
  };
}
