/** NetBox 4.3's filter names of core data sources and data files (DataSourceFilterSet, DataFileFilterSet); see netbox-filters.ts. */
export const CORE_DATA_FILTERS: Record<string, readonly string[]> = {
  datasource: ["created", "created_by_request", "description", "enabled", "id", "last_synced", "last_updated", "modified_by_request", "name", "q", "source_url", "status", "sync_interval", "tag", "tag_id", "type", "updated_by_request"],
  datafile: ["created", "created_by_request", "hash", "id", "last_updated", "modified_by_request", "path", "q", "size", "source", "source_id", "updated_by_request"],
};
