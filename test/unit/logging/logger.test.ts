import { expect } from 'chai';
import { createLogger, REDACTED, requestLogFields, requestLogger } from '../../../src/logging/logger.js';
import { SECRET_PROMPT, secretRequest as request } from '../builders.js';

function capture(level: 'debug' | 'info' | 'warn' | 'error' = 'debug') {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level, write: (l) => void lines.push(l), now: () => 0 }) };
}

describe('logger', () => {
  it('writes one JSON object per line with ts, level, msg and fields', () => {
    const { lines, logger } = capture();
    logger.info('hello', { a: 1, skip: undefined, b: 'x' });
    expect(lines).to.have.length(1);
    expect(lines[0]!.endsWith('\n')).to.equal(true);
    expect(JSON.parse(lines[0]!)).to.deep.equal({ ts: '1970-01-01T00:00:00.000Z', level: 'info', msg: 'hello', a: 1, b: 'x' });
  });

  it('drops lines below the level', () => {
    const { lines, logger } = capture('warn');
    logger.info('no');
    logger.debug('no');
    logger.error('yes');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).to.deep.equal(['yes']);
    expect(logger.enabled('info')).to.equal(false);
  });

  it('puts request_id and trace_id on every line of a request logger', () => {
    const { lines, logger } = capture();
    const log = requestLogger(
      logger,
      request({ requestId: 'rid-9', traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01' }),
    );
    log.info('routed', { endpoint: '127.0.0.1:8001' });
    log.child({ phase: 'response' }).warn('slow');
    for (const l of lines) {
      expect(JSON.parse(l)).to.include({ request_id: 'rid-9', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' });
    }
  });

  it('omits trace_id without a valid traceparent', () => {
    expect(requestLogFields({ requestId: 'x' })).to.deep.equal({ request_id: 'x' });
    expect(requestLogFields({ requestId: 'x', traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` })).to.deep.equal({
      request_id: 'x',
    });
  });

  it('request-scoped lines carry ids and numbers, never the prompt', () => {
    const { lines, logger } = capture();
    const r = request();
    requestLogger(logger, r).info('routed', { prompt_tokens: r.promptTokens, model: r.model });
    expect(lines.join('')).to.not.include(SECRET_PROMPT.slice(0, 12));
  });
});

describe('logger redaction', () => {
  it('censors request-content fields even when a caller passes them', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', write: (l) => void lines.push(l) });
    logger.info('oops', { prompt: SECRET_PROMPT, prefix: SECRET_PROMPT, request_id: 'r1' });
    logger.child({ body: SECRET_PROMPT }).warn('child oops');
    expect(lines.join('')).to.not.include(SECRET_PROMPT.slice(0, 12));
    expect(JSON.parse(lines[0]!)).to.include({ prompt: REDACTED, prefix: REDACTED, request_id: 'r1' });
  });
});
