/**
 * Realistic, deterministic chat-completions bodies for the ext_proc load test: a handful
 * of long shared system prompts (the cache-affinity case) followed by short, varied user
 * turns, roughly 1.5–3 KiB each like typical assistant traffic. Seeded, so every run
 * sends the same bytes.
 */
import { seededRng } from '../../src/util/rng.js';

const WORDS = (
  'the router sends each request to an engine that already holds its prompt prefix in the ' +
  'key value cache while keeping queues short across every engine in the pool so latency stays low ' +
  'answer questions about billing accounts orders shipping refunds policies products and code'
).split(' ');

function sentence(rng: ReturnType<typeof seededRng>, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(WORDS[rng.int(WORDS.length)]!);
  return out.join(' ') + '.';
}

export function chatBodies(count: number, seed = 1, systemPrompts = 8): Buffer[] {
  const rng = seededRng(seed);
  const systems = Array.from(
    { length: systemPrompts },
    (_, i) => `You are assistant #${i}. ` + Array.from({ length: 12 }, () => sentence(rng, 14)).join(' '),
  );
  return Array.from({ length: count }, () => {
    const body = {
      model: 'llama-3-8b-instruct',
      stream: rng.next() < 0.7,
      max_tokens: 128 + rng.int(512),
      messages: [
        { role: 'system', content: systems[rng.int(systems.length)]! },
        { role: 'user', content: Array.from({ length: 1 + rng.int(4) }, () => sentence(rng, 8 + rng.int(16))).join(' ') },
      ],
    };
    return Buffer.from(JSON.stringify(body), 'utf8');
  });
}
