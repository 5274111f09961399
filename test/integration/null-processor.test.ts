import { expect } from 'chai';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { readNullConfig, startNullProcessor } from '../../bench/contenders/null-processor.js';
import { connect, open } from '../kit/ext-proc-client.js';
import { chatBody, kindOf, requestBody, requestHeaders, responseHeaders } from '../kit/ext-proc-messages.js';

const FDS = { requestBodyMode: 'FULL_DUPLEX_STREAMED', responseBodyMode: 'NONE' } as const;
const ENDPOINT = '127.0.0.5:8000';

/** One request through a processor on `port`: the exchange the null-hop control relies on. */
async function checkExchange(port: number): Promise<void> {
  const client = connect(port);
  try {
    const c = open(client);
    const body = chatBody('a prompt the null processor never reads');
    const cut = Math.floor(body.length / 2);
    c.send(requestHeaders(FDS), requestBody(body.slice(0, cut), false));
    // Nothing is answered before the body has ended.
    await new Promise((r) => setTimeout(r, 100));
    expect(c.all).to.have.length(0);
    c.send(requestBody(body.slice(cut), false), requestBody('', true));
    const out = await c.waitFor(2);
    expect(out.map(kindOf)).to.deep.equal(['request_headers', 'request_body']);
    const common = out[0]!.request_headers!.response!;
    const set = Object.fromEntries(common.header_mutation!.set_headers.map((h) => [h.header!.key, h.header!.raw_value.toString('utf8')]));
    expect(set['x-gateway-destination-endpoint']).to.equal(ENDPOINT);
    expect(common.clear_route_cache).to.equal(true);
    const lb = out[0]!.dynamic_metadata!.fields['envoy.lb']!.structValue!.fields['x-gateway-destination-endpoint']!.stringValue;
    expect(lb).to.equal(ENDPOINT);
    const echo = out[1]!.request_body!.response!.body_mutation!.streamed_response!;
    expect(echo.body.toString('utf8')).to.equal(body);
    expect(echo.end_of_stream).to.equal(true);
    expect((await c.finished).code).to.equal(GrpcStatus.OK);

    // Anything else (a response, here) ends its stream with FAILED_PRECONDITION.
    const other = open(client);
    other.send(responseHeaders(200));
    expect((await other.finished).code).to.equal(GrpcStatus.FAILED_PRECONDITION);
  } finally {
    client.close();
  }
}

describe("integration: the null-hop control's do-nothing ext_proc processor (bench)", function () {
  this.timeout(20000);

  it('reads the listen address and the first endpoint of a router config, and refuses a config without them', () => {
    const cfg = readNullConfig(
      'server:\n  grpcAddress: 127.0.0.1:9001\nendpoints:\n  - address: 127.0.0.5:8000\n  - address: 127.0.0.6:8000\n',
    );
    expect(cfg).to.deep.equal({ grpcAddress: '127.0.0.1:9001', endpoint: ENDPOINT });
    expect(() => readNullConfig('server:\n  grpcAddress: 127.0.0.1:9001\n')).to.throw(/endpoints\[0\]\.address/);
    expect(() => readNullConfig('')).to.throw(/server\.grpcAddress/);
  });

  it('Node: holds the headers answer until the body ends, names the endpoint, gives the whole body back and ends OK', async () => {
    const server = await startNullProcessor({ grpcAddress: '127.0.0.1:0', endpoint: ENDPOINT });
    try {
      await checkExchange(server.port);
    } finally {
      await server.stop();
    }
  });
});
