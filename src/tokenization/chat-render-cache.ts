/**
 * Renders chat prompts without running the template interpreter per request, where that is
 * provably the same text: the template is rendered once per conversation *shape* (roles,
 * names, tool calls, tools — everything but the message contents) with each non-empty
 * string content replaced by a placeholder, and each request's text is that skeleton with
 * its contents put back.
 *
 * Why: `@huggingface/jinja` interprets the template on every render at a cost per message
 * (tens of microseconds each), independent of content length, which a 30-turn agent
 * conversation repeats on every request; putting contents into a cached skeleton costs a
 * string concatenation.
 *
 * When it is exact: only for templates where message content is opaque (`contentIsOpaque`,
 * checked once on the parsed template). Content of a message loop variable (`for m in
 * messages`, `m['content']` / `m.content`) may only be written out verbatim (alone or in a
 * `+` concatenation), tested for truthiness, or tested with `is string|defined|undefined|none`;
 * for a non-empty string the placeholder answers all of those the same way, so control flow
 * and every other output are identical. Branches such a test rules out for a non-empty
 * string (`{% if m.content is string %}…{% else %}<here>`) may use it freely: only messages
 * without a placeholder reach them. In vLLM's `openai` content format the text is each text
 * part's `p['text']` (`for p in m['content']`), and the content list may be looped over or
 * tested. Anything else — a filter (`| trim`), a comparison, `in`, a method call other than
 * `m.get('<another field>')`, indexing, `messages[0]`, a message passed whole (`| tojson`, a
 * macro argument, `set x = m`), `loop.previtem`/`nextitem`, a content read on any other
 * object, or output captured by a block `set`, `filter` or `call` — makes the template not
 * opaque, and it is rendered in full every time. Empty or non-string texts stay in the shape
 * key; a placeholder character anywhere else in a request renders that request in full.
 */

import { ownString } from './own-string.js';

/** A message as the template receives it (content already in the template's format). */
export type TemplateMessage = Readonly<Record<string, unknown>> & { readonly content?: unknown };

const OPEN = '\uE000';
const CLOSE = '\uE001';
const SLOT = /\uE000(\d+)\uE001/g;
const SAFE_TESTS = new Set(['string', 'defined', 'undefined', 'none']);

type Position = 'out' | 'test' | 'expr';
const NONE: ReadonlySet<string> = new Set();

function withName(set: ReadonlySet<string>, name: string): ReadonlySet<string> {
  return new Set([...set, name]);
}

interface Node {
  readonly type?: unknown;
  readonly [k: string]: unknown;
}

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null;
}

function identifier(v: unknown): string | undefined {
  return isNode(v) && v.type === 'Identifier' && typeof v['value'] === 'string' ? v['value'] : undefined;
}

/** The constant name a member expression reads (`x['name']`, `x.name`), or undefined when computed otherwise. */
function propertyName(n: Node): string | undefined {
  const p = n['property'];
  if (n['computed'] === true) return isNode(p) && p.type === 'StringLiteral' && typeof p['value'] === 'string' ? p['value'] : undefined;
  return identifier(p);
}

/** Where a request's text sits in the messages the template gets (vLLM's content formats). */
export type ContentFormat = 'string' | 'openai';

/**
 * Whether message text is opaque to the template (see the header): true only when every use
 * of it is one whose result is the same for any non-empty string. Text is `m['content']` of a
 * message loop variable in the `string` format; in the `openai` format it is `p['text']` of a
 * part loop variable (`for p in m['content']`), and the content list itself may only be
 * looped over or tested (its length and part types do not change).
 * @param parsed the template's parsed program (`Template.parsed`)
 * @param source the template source (placeholders must not occur in it)
 */
export function contentIsOpaque(parsed: unknown, source: string, format: ContentFormat = 'string'): boolean {
  if (source.includes(OPEN) || source.includes(CLOSE)) return false;
  const messageVars = new Set<string>();
  const partVars = new Set<string>();
  const contentOf = (v: unknown): string | undefined => {
    if (!isNode(v) || v.type !== 'MemberExpression' || propertyName(v) !== 'content') return undefined;
    const name = identifier(v['object']);
    return name !== undefined && messageVars.has(name) ? name : undefined;
  };
  const collect = (v: unknown, pass: 'messages' | 'parts'): void => {
    if (Array.isArray(v)) {
      for (const x of v) collect(x, pass);
      return;
    }
    if (!isNode(v)) return;
    if (v.type === 'For') {
      const name = identifier(v['loopvar']);
      if (name !== undefined && pass === 'messages' && identifier(v['iterable']) === 'messages') messageVars.add(name);
      if (name !== undefined && pass === 'parts' && format === 'openai' && contentOf(v['iterable']) !== undefined) partVars.add(name);
    }
    for (const k of Object.keys(v)) if (k !== 'type') collect(v[k], pass);
  };
  collect(parsed, 'messages');
  collect(parsed, 'parts');
  /** The property holding text of a loop variable, if it holds text. */
  const textProp = (name: string): string | undefined =>
    format === 'string' ? (messageVars.has(name) ? 'content' : undefined) : partVars.has(name) ? 'text' : undefined;

  /**
   * What an `if` test says about a loop variable whose text is a placeholder (a non-empty
   * string; in the openai format, a content list holding one): the variable and whether the
   * test is then true, or undefined when it is not such a test.
   */
  const knownFor = (test: unknown): { readonly name: string; readonly value: boolean } | undefined => {
    let negate = false;
    let t = test;
    while (isNode(t) && t.type === 'UnaryExpression' && isNode(t['operator']) && t['operator']['value'] === 'not') {
      negate = !negate;
      t = t['argument'];
    }
    if (!isNode(t)) return undefined;
    let member: unknown = t;
    let testName: string | undefined;
    if (t.type === 'TestExpression') {
      testName = identifier(t['test']);
      if (testName === undefined || !SAFE_TESTS.has(testName)) return undefined;
      member = t['operand'];
    }
    if (!isNode(member) || member.type !== 'MemberExpression') return undefined;
    const name = identifier(member['object']);
    if (name === undefined) return undefined;
    const prop = propertyName(member);
    let isString: boolean;
    if (prop !== undefined && prop === textProp(name)) isString = true;
    else if (format === 'openai' && prop === 'content' && messageVars.has(name)) isString = false;
    else return undefined;
    const value = testName === undefined ? true : testName === 'defined' ? true : testName === 'string' ? isString : false;
    const negated = isNode(t) && t.type === 'TestExpression' && t['negate'] === true;
    return { name, value: (value !== negated) !== negate };
  };

  // `free`: loop variables known, in this branch, not to hold a placeholder (so any use of
  // their text is the same in the skeleton and the real render).
  const check = (v: unknown, pos: Position, free: ReadonlySet<string> = NONE): boolean => {
    if (Array.isArray(v)) return v.every((x) => check(x, pos, free));
    if (!isNode(v)) return true;
    switch (v.type) {
      case 'Program':
        return check(v['body'], 'out', free);
      case 'For': {
        const it = v['iterable'];
        const over = identifier(it) === 'messages' || (format === 'openai' && contentOf(it) !== undefined);
        return (over || check(it, 'expr', free)) && check(v['body'], 'out', free) && check(v['defaultBlock'], 'out', free);
      }
      case 'If': {
        const known = knownFor(v['test']);
        const body = known !== undefined && !known.value ? withName(free, known.name) : free;
        const alternate = known?.value ? withName(free, known.name) : free;
        return check(v['test'], 'test', free) && check(v['body'], 'out', body) && check(v['alternate'], 'out', alternate);
      }
      case 'Identifier': {
        const name = identifier(v)!;
        // A loop variable or `messages` used whole can carry text anywhere.
        return free.has(name) || (!messageVars.has(name) && !partVars.has(name) && name !== 'messages');
      }
      case 'MemberExpression': {
        const obj = v['object'];
        const objName = identifier(obj);
        const prop = propertyName(v);
        if (objName !== undefined && free.has(objName)) return v['computed'] === true ? check(v['property'], 'expr', free) : true;
        if (objName !== undefined && (messageVars.has(objName) || partVars.has(objName))) {
          if (prop === undefined) return false;
          if (prop === textProp(objName)) return pos !== 'expr';
          if (prop === 'content') return format === 'openai' && pos === 'test';
          return true;
        }
        if (prop === 'content') return false;
        if (objName === 'loop' && (prop === 'previtem' || prop === 'nextitem')) return false;
        return check(obj, 'expr', free) && (v['computed'] === true ? check(v['property'], 'expr', free) : true);
      }
      case 'CallExpression': {
        // A method of a loop variable (`m.get('tool_calls')`) may not reach its text.
        const callee = v['callee'];
        const owner = isNode(callee) && callee.type === 'MemberExpression' ? identifier(callee['object']) : undefined;
        if (owner !== undefined && !free.has(owner) && (messageVars.has(owner) || partVars.has(owner))) {
          const args = Array.isArray(v['args']) ? (v['args'] as unknown[]) : [];
          const arg = args[0];
          const key = isNode(arg) && arg.type === 'StringLiteral' ? arg['value'] : undefined;
          if (propertyName(callee as Node) !== 'get' || typeof key !== 'string' || key === 'content' || key === textProp(owner))
            return false;
          return check(args, 'expr', free);
        }
        return check(callee, 'expr', free) && check(v['args'], 'expr', free);
      }
      case 'TestExpression': {
        const test = identifier(v['test']);
        return check(v['operand'], test !== undefined && SAFE_TESTS.has(test) ? 'test' : 'expr', free);
      }
      case 'UnaryExpression': {
        const op = isNode(v['operator']) ? v['operator']['value'] : undefined;
        return check(v['argument'], op === 'not' && pos === 'test' ? 'test' : 'expr', free);
      }
      case 'BinaryExpression': {
        const op = isNode(v['operator']) ? v['operator']['value'] : undefined;
        const side: Position = op === '+' && pos === 'out' ? 'out' : (op === 'and' || op === 'or') && pos === 'test' ? 'test' : 'expr';
        return check(v['left'], side, free) && check(v['right'], side, free);
      }
      default:
        // Everything else (set, macros, calls, filters, block captures, ternaries, literals…):
        // text may only appear where its value could not matter.
        return Object.keys(v).every((k) => k === 'type' || check(v[k], 'expr', free));
    }
  };
  return check(parsed, 'out');
}

interface Skeleton {
  /** Literal text around the slots: parts.length === slots.length + 1. */
  readonly parts: readonly string[];
  /** Index of the text (in shape order) that fills each slot. */
  readonly slots: readonly number[];
}

export interface ChatRenderStats {
  readonly hits: number;
  readonly misses: number;
  /** Renders that could not use a skeleton (template not opaque, or placeholder characters in the request). */
  readonly full: number;
  readonly shapes: number;
}

export class ChatRenderCache {
  /** Shape key → skeleton, or null when the shape's render cannot be split back (rendered in full). */
  private readonly skeletons = new Map<string, Skeleton | null>();
  private hits = 0;
  private misses = 0;
  private full = 0;

  /**
   * @param render the template render (the reference the skeletons must reproduce)
   * @param opaque `contentIsOpaque` of the template (for `format`); false renders every request in full
   * @param format where the template finds message text
   * @param maxShapes conversation shapes kept (LRU)
   */
  constructor(
    private readonly render: (messages: readonly TemplateMessage[], tools: readonly unknown[] | undefined) => string,
    readonly opaque: boolean,
    private readonly format: ContentFormat = 'string',
    private readonly maxShapes = 1024,
  ) {}

  /** The rendered prompt, equal to `render(messages, tools)`. */
  renderChat(messages: readonly TemplateMessage[], tools: readonly unknown[] | undefined): string {
    if (!this.opaque) return this.renderFull(messages, tools);
    const texts: string[] = [];
    const shape = messages.map((m) => this.shapeOf(m, texts));
    const key = JSON.stringify(tools === undefined ? [shape] : [shape, tools]);
    // Placeholders must come from the shape alone, never from the request's other fields.
    if (texts.length === 0 || countOpen(key) !== texts.length) return this.renderFull(messages, tools);
    let sk = this.skeletons.get(key);
    if (sk !== undefined) {
      this.hits++;
      this.skeletons.delete(key);
      this.skeletons.set(key, sk);
    } else {
      this.misses++;
      sk = split(this.render(shape, tools), texts.length);
      this.skeletons.set(key, sk);
      if (this.skeletons.size > this.maxShapes) this.skeletons.delete(this.skeletons.keys().next().value as string);
    }
    if (sk === null) return this.renderFull(messages, tools);
    let out = sk.parts[0]!;
    for (let s = 0; s < sk.slots.length; s++) out += texts[sk.slots[s]!]! + sk.parts[s + 1]!;
    return out;
  }

  /** The message with each non-empty text replaced by the next placeholder (its text appended to `texts`). */
  private shapeOf(m: TemplateMessage, texts: string[]): TemplateMessage {
    const c = m.content;
    if (this.format === 'string') {
      if (typeof c !== 'string' || c.length === 0) return m;
      return { ...m, content: placeholder(texts, c) };
    }
    if (!Array.isArray(c)) return m;
    return {
      ...m,
      content: c.map((part: unknown) => {
        const p = part as Record<string, unknown> | null;
        const text = typeof p === 'object' && p !== null && p['type'] === 'text' ? p['text'] : undefined;
        return typeof text === 'string' && text.length > 0 ? { ...p, text: placeholder(texts, text) } : part;
      }),
    };
  }

  stats(): ChatRenderStats {
    return { hits: this.hits, misses: this.misses, full: this.full, shapes: this.skeletons.size };
  }

  private renderFull(messages: readonly TemplateMessage[], tools: readonly unknown[] | undefined): string {
    this.full++;
    return this.render(messages, tools);
  }
}

function countOpen(s: string): number {
  let n = 0;
  for (let i = s.indexOf(OPEN); i >= 0; i = s.indexOf(OPEN, i + 1)) n++;
  return n;
}

function placeholder(texts: string[], text: string): string {
  texts.push(text);
  return `${OPEN}${texts.length - 1}${CLOSE}`;
}

/** The skeleton of a shape's render, or null unless every placeholder in it is a whole slot. */
function split(rendered: string, slotCount: number): Skeleton | null {
  const parts: string[] = [];
  const slots: number[] = [];
  let last = 0;
  SLOT.lastIndex = 0;
  for (let m = SLOT.exec(rendered); m !== null; m = SLOT.exec(rendered)) {
    const i = Number(m[1]);
    if (!(i < slotCount)) return null;
    parts.push(rendered.slice(last, m.index));
    slots.push(i);
    last = m.index + m[0].length;
  }
  parts.push(rendered.slice(last));
  // Own copies: one-byte where the text allows (the render holds two-byte placeholders), so
  // the prompts built from them stay one-byte (fast to compare, scan and hash).
  return countOpen(rendered) === slots.length ? { parts: parts.map(ownString), slots } : null;
}
