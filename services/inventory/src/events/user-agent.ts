import { NETBOX_VERSION } from '../api/conventions.ts';

/** Outgoing webhooks name their sender in NetBox's `NetBox/<version> <edition>` shape, with this service in the edition's place. */
export const WEBHOOK_USER_AGENT = `NetBox/${NETBOX_VERSION} inventory/0.1.0`;
