/**
 * Deterministic fact extraction from first-person statements, used when no
 * LLM is configured: "I live in Paris" → "The user lives in Paris",
 * "my name is Ada" → "The user's name is Ada". Questions, hedges and chit-chat
 * ("I'm not sure", "I think so?") give nothing.
 */

/** Only the start of a long message is read: facts are short, and this bounds the regex work. */
const MAX_INPUT = 8_000;
const MAX_FACTS = 10;
const MAX_REST_WORDS = 30;

/** Verbs whose first-person statements describe the user (base form). */
const VERBS = new Set(
  (
    'like love enjoy adore prefer hate dislike work live study have own speak play teach drive eat drink read watch ' +
    'support believe want need plan collect cook run swim visit use practice practise write paint sing grow build ' +
    'know follow travel attend volunteer commute ride wear keep raise miss'
  ).split(' '),
);
/** Past forms kept as they are ("I was born in …", "I grew up in …"). */
const PAST = new Set(
  'was grew moved studied worked lived used graduated started stopped quit married met visited learned learnt lost won bought sold left joined founded'.split(' '),
);
const ADVERBS = new Set('really also absolutely totally usually often always sometimes never still actually mostly just currently recently definitely kind sort of'.split(' '));
/** "I'm X" statements that say nothing lasting about the user. */
const NOT_FACTS = new Set(
  'sorry sure unsure glad afraid wondering asking curious confused here back done ok okay fine good great well thinking trying going just so not fine happy to tired bored kidding joking'.split(
    ' ',
  ),
);

function thirdPerson(verb: string): string {
  if (verb === 'have') return 'has';
  if (/(s|sh|ch|x|z|o)$/.test(verb)) return verb + 'es';
  if (/[^aeiou]y$/.test(verb)) return verb.slice(0, -1) + 'ies';
  return verb + 's';
}

/** First person → third person in the rest of a statement ("my dog" → "their dog"). */
function shiftPronouns(rest: string): string {
  return rest
    .replace(/\bmyself\b/gi, 'themselves')
    .replace(/\bmine\b/gi, 'theirs')
    .replace(/\bmy\b/gi, 'their')
    .replace(/\bme\b/gi, 'them')
    .replace(/\bI'm\b/g, "they're")
    .replace(/\bI am\b/g, 'they are')
    .replace(/\bI\b/g, 'they')
    .replace(/\bour\b/gi, 'their')
    .replace(/\bwe\b/gi, 'they');
}

function clean(rest: string): string | undefined {
  const words = rest
    .replace(/[\s"“”()]+$/g, '')
    .replace(/^[\s,:-]+/, '')
    .split(/\s+/)
    .filter(Boolean);
  if (words.length === 0) return undefined;
  return shiftPronouns(words.slice(0, MAX_REST_WORDS).join(' ')).replace(/[,:;\s-]+$/, '');
}

/** Clauses of the text that are statements (not questions), with "and I …" / "but my …" split off. */
function statements(text: string): string[] {
  const out: string[] = [];
  for (const m of text.slice(0, MAX_INPUT).matchAll(/([^.!?\n;]+)([.!?\n;]*)/g)) {
    if (m[2]!.includes('?')) continue;
    for (const clause of m[1]!.split(/,?\s+(?:and|but|so|because|while)\s+(?=(?:i|i'm|im|i've|my)\b)/i)) {
      const c = clause.trim().replace(/[’`]/g, "'");
      if (c) out.push(c);
    }
  }
  return out;
}

const CLAUSE_LEAD = /^(?:(?:and|but|so|also|well|actually|oh|yeah|yes|no|hi|hey|hello|honestly|btw|anyway|ok|okay)\b[,!]?\s*)*/i;

function factOf(clause: string): string | undefined {
  const c = clause.replace(CLAUSE_LEAD, '');
  let m = /^my\s+([\w' -]{1,60}?)\s+(is|are|was|were)\s+(.+)$/i.exec(c);
  if (m) {
    const rest = clean(m[3]!);
    return rest ? `The user's ${shiftPronouns(m[1]!.toLowerCase())} ${m[2]!.toLowerCase()} ${rest}` : undefined;
  }
  m = /^i(?:'m|\s+am|m)\s+(not\s+)?(.+)$/i.exec(c);
  if (m) {
    const rest = clean(m[2]!);
    if (!rest) return undefined;
    const first = rest.split(' ')[0]!.toLowerCase();
    if (NOT_FACTS.has(first) || /^(a bit|a little|kind of|sort of)$/i.test(rest)) return undefined;
    return `The user is ${m[1] ? 'not ' : ''}${rest}`;
  }
  m = /^i(?:'ve|\s+have)\s+(been|lived|worked|studied|had|owned|played|always|never)\s+(.+)$/i.exec(c);
  if (m) {
    const rest = clean(m[2]!);
    return rest ? `The user has ${m[1]!.toLowerCase()} ${rest}` : undefined;
  }
  m = /^i(?:'d|\s+would)\s+(like|love|prefer)\s+(.+)$/i.exec(c);
  if (m) {
    const rest = clean(m[2]!);
    return rest ? `The user would ${m[1]!.toLowerCase()} ${rest}` : undefined;
  }
  m = /^i\s+(.+)$/i.exec(c);
  if (!m) return undefined;
  const tokens = m[1]!.split(/\s+/);
  const adverbs: string[] = [];
  let negated = false;
  let i = 0;
  for (; i < tokens.length && i < 4; i++) {
    const t = tokens[i]!.toLowerCase();
    if (t === "don't" || t === 'dont' || t === 'do' || (t === 'not' && negated)) {
      if (t !== 'do') negated = true;
      else if (tokens[i + 1]?.toLowerCase() === 'not') {
        negated = true;
        i++;
      }
      continue;
    }
    if (ADVERBS.has(t)) {
      adverbs.push(t);
      continue;
    }
    break;
  }
  const verb = tokens[i]?.toLowerCase();
  const rest = clean(tokens.slice(i + 1).join(' '));
  if (!verb || !rest) return undefined;
  const lead = adverbs.length ? adverbs.join(' ') + ' ' : '';
  if (PAST.has(verb)) return negated ? undefined : `The user ${lead}${verb} ${rest}`;
  if (!VERBS.has(verb)) return undefined;
  if (negated) return `The user ${lead}doesn't ${verb} ${rest}`;
  return `The user ${lead}${thirdPerson(verb)} ${rest}`;
}

/** Facts about the user stated in one message, in order, without repeats. */
export function extractFacts(text: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const clause of statements(text)) {
    const f = factOf(clause);
    if (!f) continue;
    const key = f.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(f.endsWith('.') ? f : f + '.');
    if (out.length >= MAX_FACTS) break;
  }
  return out;
}
