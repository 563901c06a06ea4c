// The benchmark template: a typical webhook body (device fields, a loop over 50 interfaces) and its context.

export const TEMPLATE = `{
  "event": "{{ event }}",
  "timestamp": "{{ timestamp }}",
  "model": "{{ model }}",
  "username": "{{ username }}",
  "request_id": "{{ request_id }}",
  "device": {
    "id": {{ data.id }},
    "name": "{{ data.name }}",
    "status": "{{ data.status.value }}",
    "site": "{{ data.site.name|upper }}",
    "tags": {{ data.tags|map(attribute='name')|list|tojson }}
  },
  "interfaces": [
  {%- for iface in data.interfaces %}
    {"name": "{{ iface.name }}", "enabled": {{ iface.enabled|lower }}, "mtu": {{ iface.mtu or 1500 }}, "speed": "{{ '%.1f'|format(iface.speed / 1000) }}G"}{{ "," if not loop.last }}
  {%- endfor %}
  ],
  "summary": "{{ data.interfaces|selectattr('enabled')|list|length }} of {{ data.interfaces|length }} interfaces enabled",
  "custom_fields": {{ data.custom_fields|tojson }}
}`;

export function context() {
  return {
    event: 'updated',
    timestamp: '2026-03-06T15:11:23.503186+00:00',
    model: 'device',
    username: 'admin',
    request_id: '17af32f0-852a-46ca-a7d4-33ecd0c13de6',
    data: {
      id: 42,
      name: 'edge-rtr-01',
      status: { value: 'active', label: 'Active' },
      site: { id: 5, name: 'Amsterdam DC1', slug: 'ams-dc1' },
      tags: [
        { id: 1, name: 'Foo', slug: 'foo' },
        { id: 2, name: 'Bar', slug: 'bar' },
      ],
      interfaces: Array.from({ length: 50 }, (_, i) => ({
        name: `xe-0/0/${i}`,
        enabled: i % 3 !== 0,
        mtu: i % 5 === 0 ? null : 9216,
        speed: 10000 + (i % 4) * 15000,
      })),
      custom_fields: { monitoring: true, owner_email: 'noc@example.com', sla_hours: 4, cost: 1250.5 },
    },
  };
}
