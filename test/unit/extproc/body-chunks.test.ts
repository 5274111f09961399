import { expect } from 'chai';
import { BodyCollector, ECHO_MESSAGE_BYTES } from '../../../src/extproc/body-chunks.js';

describe('extproc/body-chunks BodyCollector', () => {
  it('joins the chunks once and echoes a small body as one piece', () => {
    const c = new BodyCollector(100);
    expect(c.push(Buffer.from('ab'))).to.equal(true);
    expect(c.push(Buffer.from(''))).to.equal(true);
    expect(c.push(Buffer.from('cd'))).to.equal(true);
    const { body, echo } = c.take();
    expect(body.toString()).to.equal('abcd');
    expect(echo.map((b) => b.toString())).to.deep.equal(['abcd']);
    expect(c.take().body.length, 'empty after take').to.equal(0);
  });

  it('gives a single chunk back without copying it', () => {
    const c = new BodyCollector(100);
    const chunk = Buffer.from('only');
    c.push(chunk);
    expect(c.take().body).to.equal(chunk);
  });

  it('cuts a large body along its chunk boundaries into echo pieces within the limit', () => {
    const c = new BodyCollector(10 * ECHO_MESSAGE_BYTES);
    const sizes = [ECHO_MESSAGE_BYTES / 2, ECHO_MESSAGE_BYTES / 2, ECHO_MESSAGE_BYTES / 2, 10];
    for (const [i, n] of sizes.entries()) c.push(Buffer.alloc(n, 65 + i));
    const { body, echo } = c.take();
    expect(body.length).to.equal(sizes.reduce((a, b) => a + b, 0));
    expect(echo.map((b) => b.length)).to.deep.equal([ECHO_MESSAGE_BYTES, ECHO_MESSAGE_BYTES / 2 + 10]);
    expect(Buffer.concat(echo as Buffer[]).equals(body)).to.equal(true);
  });

  it('refuses (and drops everything) once the body exceeds the limit', () => {
    const c = new BodyCollector(5);
    expect(c.push(Buffer.from('abc'))).to.equal(true);
    expect(c.push(Buffer.from('def'))).to.equal(false);
    expect(c.take().body.length).to.equal(0);
  });
});
