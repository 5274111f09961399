/**
 * Encodes an OpenAI-style chat completion body into the affinity prefix, laid out the way
 * an engine's chat template renders it: tool definitions first, then every message in
 * order. The engine's KV cache is keyed by that rendered token sequence, so requests that
 * share a rendered prefix (same tools, same system prompt, earlier turns of the same
 * conversation) must share an encoded prefix here too.
 *
 * Record layout (see MARK in prefix-builder.ts):
 *   tool:    OPEN "tool" FIELD <canonical JSON of the tool> CLOSE
 *   message: OPEN <role> [FIELD "name=" <name>] [FIELD "tool_call_id=" <id>]
 *            [FIELD "content=" <content>] [FIELD "tool_calls=" <canonical JSON>] CLOSE
 * Content parts: text parts are concatenated; image/audio/video/file parts become a
 * fixed-size placeholder ESC "[" kind ":" <16 hex of SHA-256 of the URL/data> "]", so
 * different images differ without copying their data. No generation-prompt marker is
 * appended, so a conversation's encoding is a prefix of the encoding of any extension
 * of it (multi-turn affinity).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { badField, isObject, own, type JsonObject } from './body-fields.js';
import { MARK, type PrefixBuilder } from './prefix-builder.js';
import { RouterError } from '../core/errors.js';

const HASH_HEX_CHARS = 16;

export function encodeChat(body: JsonObject, out: PrefixBuilder): void {
  encodeTools(body, 'tools', out);
  encodeTools(body, 'functions', out); // legacy function-calling field, same idea

  const messages = own(body, 'messages');
  if (messages === undefined) throw new RouterError('BAD_REQUEST', 'messages: required for chat completions');
  if (!Array.isArray(messages)) throw badField('messages', 'array of messages', messages);
  if (messages.length === 0) throw new RouterError('BAD_REQUEST', 'messages: must not be empty');
  for (let i = 0; i < messages.length; i++) encodeMessage(messages[i], `messages[${i}]`, out);
}

function encodeTools(body: JsonObject, key: 'tools' | 'functions', out: PrefixBuilder): void {
  const tools = own(body, key);
  if (tools === undefined) return;
  if (!Array.isArray(tools)) throw badField(key, 'array of tool definitions', tools);
  const tag = key === 'tools' ? 'tool' : 'function';
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    const where = `${key}[${i}]`;
    if (!isObject(tool)) throw badField(where, 'object', tool);
    out.raw(MARK.open + tag + MARK.field);
    out.text(canonicalJson(tool, where));
    out.raw(MARK.close);
  }
}

function encodeMessage(msg: unknown, where: string, out: PrefixBuilder): void {
  if (!isObject(msg)) throw badField(where, 'message object', msg);
  const role = own(msg, 'role');
  if (typeof role !== 'string' || role.length === 0) throw badField(`${where}.role`, 'non-empty string', role);
  const name = own(msg, 'name');
  if (name !== undefined && typeof name !== 'string') throw badField(`${where}.name`, 'string', name);
  const toolCallId = own(msg, 'tool_call_id');
  if (toolCallId !== undefined && typeof toolCallId !== 'string') {
    throw badField(`${where}.tool_call_id`, 'string', toolCallId);
  }
  const toolCalls = own(msg, 'tool_calls');
  if (toolCalls !== undefined && !Array.isArray(toolCalls)) {
    throw badField(`${where}.tool_calls`, 'array of tool calls', toolCalls);
  }

  out.raw(MARK.open);
  out.text(role);
  if (name !== undefined) {
    out.raw(MARK.field + 'name=');
    out.text(name);
  }
  if (toolCallId !== undefined) {
    out.raw(MARK.field + 'tool_call_id=');
    out.text(toolCallId);
  }
  const content = own(msg, 'content');
  if (content !== undefined) {
    out.raw(MARK.field + 'content=');
    encodeContent(content, `${where}.content`, out);
  }
  if (toolCalls !== undefined) {
    for (let i = 0; i < toolCalls.length; i++) {
      const call: unknown = toolCalls[i];
      if (!isObject(call)) throw badField(`${where}.tool_calls[${i}]`, 'object', call);
    }
    out.raw(MARK.field + 'tool_calls=');
    out.text(canonicalJson(toolCalls, `${where}.tool_calls`));
  }
  out.raw(MARK.close);
}

function encodeContent(content: unknown, where: string, out: PrefixBuilder): void {
  if (typeof content === 'string') {
    out.text(content);
    return;
  }
  if (!Array.isArray(content)) throw badField(where, 'string, array of content parts or null', content);
  for (let i = 0; i < content.length; i++) encodePart(content[i], `${where}[${i}]`, out);
}

function encodePart(part: unknown, where: string, out: PrefixBuilder): void {
  if (!isObject(part)) throw badField(where, 'content part object', part);
  const type = own(part, 'type');
  if (typeof type !== 'string') throw badField(`${where}.type`, 'string', type);
  switch (type) {
    case 'text':
    case 'input_text':
    case 'refusal': {
      const key = type === 'refusal' ? 'refusal' : 'text';
      const text = own(part, key);
      if (typeof text !== 'string') throw badField(`${where}.${key}`, 'string', text);
      out.text(text);
      return;
    }
    case 'image_url':
      placeholder('image', urlOf(part, 'image_url', `${where}.image_url`), out);
      return;
    case 'input_image': {
      // Responses-API style: `image_url` is the URL string itself.
      const url = own(part, 'image_url');
      if (typeof url !== 'string') throw badField(`${where}.image_url`, 'string', url);
      placeholder('image', url, out);
      return;
    }
    case 'video_url':
      placeholder('video', urlOf(part, 'video_url', `${where}.video_url`), out);
      return;
    case 'input_audio': {
      const audio = own(part, 'input_audio');
      if (!isObject(audio)) throw badField(`${where}.input_audio`, 'object', audio);
      const data = own(audio, 'data');
      if (typeof data !== 'string') throw badField(`${where}.input_audio.data`, 'string', data);
      placeholder('audio', data, out);
      return;
    }
    case 'file': {
      const file = own(part, 'file');
      if (!isObject(file)) throw badField(`${where}.file`, 'object', file);
      const data = own(file, 'file_data') ?? own(file, 'file_id');
      if (typeof data === 'string') placeholder('file', data, out);
      else placeholder('file', () => canonicalJson(file, `${where}.file`), out);
      return;
    }
    default:
      // Unknown part types still contribute something stable and distinct.
      placeholder('part', () => canonicalJson(part, where), out);
  }
}

/** `{ url: "..." }` (OpenAI) or a bare URL string (accepted by some engines). */
function urlOf(part: JsonObject, key: string, where: string): string {
  const v = own(part, key);
  if (typeof v === 'string') return v;
  if (!isObject(v)) throw badField(where, 'object with url', v);
  const url = own(v, 'url');
  if (typeof url !== 'string') throw badField(`${where}.url`, 'string', url);
  return url;
}

/** Fixed-size placeholder; the hash is computed only if the placeholder lands in the prefix. */
function placeholder(kind: string, data: string | (() => string), out: PrefixBuilder): void {
  const head = MARK.escape + '[' + kind + ':';
  out.lazy(head.length + HASH_HEX_CHARS + 1, () => {
    const text = typeof data === 'string' ? data : data();
    return head + createHash('sha256').update(text).digest('hex').slice(0, HASH_HEX_CHARS) + ']';
  });
}
