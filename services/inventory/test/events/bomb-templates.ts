// Hostile webhook body templates ("render bombs") and the reason each delivery must fail with.
// Shared by test/events/bombs.test.ts (behaviour) and bench/inventory/bombs.ts (the API's latency while they run).

export const BOMBS: Array<{ name: string; body: string; reason: RegExp }> = [
  { name: 'list extended with itself in a loop', body: '{% set l = [1] %}{% for i in range(64) %}{% set _ = l.extend(l) %}{% endfor %}{{ l|length }}', reason: /LimitExceededError: (value of \d+ items\/characters exceeds the limit|template exceeded its (time|memory) budget)/ },
  { name: 'batch() with a huge count', body: '{{ [1]|batch(1000000000, fill_with=0)|list }}', reason: /LimitExceededError: value of 1000000000 items/ },
  { name: 'huge lists kept in a loop', body: "{% set keep = [] %}{% for i in range(1000) %}{% set _ = keep.append([0]*9000000) %}{% endfor %}", reason: /LimitExceededError: template exceeded its (memory|time) budget/ },
  { name: 'string multiplication kept in a loop', body: "{% set keep = [] %}{% for i in range(1000) %}{% set _ = keep.append('x'*9000000) %}{% endfor %}", reason: /LimitExceededError: template exceeded its (memory|time) budget/ },
  { name: 'join of big strings', body: "{% set s = 'y'*4000000 %}{% set keep = [] %}{% for i in range(100) %}{% set _ = keep.append([s, s]|join) %}{% endfor %}", reason: /LimitExceededError: template exceeded its (memory|time) budget/ },
  { name: "('f'*300000)|int(base=16)", body: "{{ ('f'*300000)|int(base=16) }}", reason: /LimitExceededError: integer result too large/ },
  { name: 'str() of a huge int', body: '{{ 2**20000 }}', reason: /ValueError: Exceeds the limit \(4300 digits\) for integer string conversion; use sys.set_int_max_str_digits\(\) to increase the limit/ },
  { name: 'wordwrap on a big string', body: "{{ ('ab '*3000000)|wordwrap(1) }}", reason: /LimitExceededError: template exceeded its step budget/ },
  { name: 'title on big strings', body: "{{ ('ab '*3000000)|title }}{{ ('cd '*3000000)|title }}", reason: /LimitExceededError: template exceeded its step budget/ },
  { name: 'center with a huge width', body: "{{ 'x'|center(2000000000) }}", reason: /LimitExceededError: value of 2000000000 items/ },
  { name: 'nested loops', body: '{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}', reason: /LimitExceededError: template exceeded (the loop iteration limit|its time budget)/ },
];
